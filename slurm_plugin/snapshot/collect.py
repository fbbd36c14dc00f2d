"""Building snapshots from a live cluster, and keeping one fresh in the background."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

from ..cluster.procs import die_with_parent
from ..slurm import SlurmClient, SlurmError
from .model import JobState, Snapshot
from .parse import ACTIVE_STATES, parse_jobs, parse_nodes, parse_partitions
from .queue_text import read_jobs
from .shared import QueueFile

log = logging.getLogger(__name__)


def build_snapshot(nodes_doc: dict, partitions_text: str, squeue_doc: dict | None = None,
                   slurm_version: str = "", taken_at: float | None = None,
                   jobs: Sequence[JobState] | None = None, jobs_taken_at: float | None = None) -> Snapshot:
    """A snapshot from already-fetched outputs (pure; used by :func:`collect_snapshot` and by tests).

    ``nodes_doc`` is ``sinfo --json`` (22.05) or ``scontrol show nodes --json`` (23.02+); ``partitions_text``
    is ``scontrol -o show partition``; ``squeue_doc`` is ``squeue --json`` (None = no jobs read), or ``jobs``
    the jobs already parsed from one (read at ``jobs_taken_at`` when earlier than ``taken_at``).
    """
    if jobs is None:
        jobs = parse_jobs(squeue_doc or {}, keep_finished=True)
    return Snapshot(nodes=tuple(parse_nodes(nodes_doc)), partitions=tuple(parse_partitions(partitions_text)),
                    jobs=tuple(j for j in jobs if j.state in ACTIVE_STATES), slurm_version=slurm_version,
                    taken_at=time.time() if taken_at is None else taken_at,
                    finished=tuple(j for j in jobs if j.state not in ACTIVE_STATES), jobs_taken_at=jobs_taken_at)


def _nodes_doc(client: SlurmClient) -> dict:
    doc = json.loads(client.run("sinfo", "--json").stdout)
    if doc.get("nodes"):  # 22.05 (v0.0.38): per-node records
        return doc
    if doc.get("errors"):  # 22.05 with slurmctld down: exit 0, no nodes, {"error": "Unspecified error"}
        said = "; ".join(str(e.get("error", e)) if isinstance(e, dict) else str(e) for e in doc["errors"])
        raise SlurmError(["sinfo", "--json"], 1, f"reported no nodes: {said}")
    # 23.02+: sinfo --json groups nodes; scontrol has per-node JSON instead
    return json.loads(client.run("scontrol", "show", "nodes", "--json").stdout)


class JobsCache:
    """The jobs of the last queue read (:func:`~.queue_text.read_jobs`), reused while younger than ``max_age_s`` (0: read every
    time). The daemon's admission reads nodes and partitions only; its jobs feed the metrics, so the daemon
    reads the whole queue (the costly RPC: every job record, under slurmctld's job read lock) on a slower period
    than the node state its answers need (issue 23 item 2)."""

    def __init__(self, max_age_s: float = 0.0, shared: QueueFile | None = None, shared_max_age_s: float | None = None):
        self.max_age_s, self.shared = max_age_s, shared
        # how old the published queue may be (default max_age_s): a cycle period plus its read, so that the
        # daemon is not ahead of the cycle by a few seconds and reads Slurm itself before each publish
        self.shared_max_age_s = max_age_s if shared_max_age_s is None else shared_max_age_s
        self.read_at: float | None = None
        self.reads = 0  # from Slurm
        self.shared_reads = 0  # from ``shared`` (the queue the cycle read and published)
        self._jobs: tuple[JobState, ...] = ()

    def jobs(self, client: SlurmClient, now: float) -> tuple[tuple[JobState, ...], float]:
        """(every job Slurm remembers, when they were read): when the cache is older than ``max_age_s``, from
        ``shared`` if that holds a queue read at most ``shared_max_age_s`` ago (kept as it is when not newer than
        the cached copy), else from Slurm; else the cached ones."""
        if self.read_at is None or now - self.read_at >= self.max_age_s:
            got = self.shared.read(self.shared_max_age_s, now) if self.shared is not None else None
            if got is None:
                self._jobs, self.read_at = tuple(read_jobs(client)), now
                self.reads += 1
            elif self.read_at is None or got[1] > self.read_at:
                self._jobs, self.read_at = got
                self.shared_reads += 1
            # else: the cycle has not published since; the copy held is as new and within shared_max_age_s
        return self._jobs, self.read_at


def collect_snapshot(client: SlurmClient, with_jobs: bool = True, cache: JobsCache | None = None) -> Snapshot:
    """Read the live cluster through ``client`` (3 Slurm commands; 2 while ``cache`` holds jobs young enough),
    the commands side by side: each client parses slurm.conf before it asks (1.1 CPU s at 10,002 node lines),
    so one after another they took 24.6 s of a loaded large site's 102.5 s cycle. Raises SlurmError if Slurm
    fails."""
    started = time.time()
    version = str(client.version)  # once, before the threads (the client caches it)
    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="snapshot-read") as pool:
        nodes_read = pool.submit(_nodes_doc, client)
        parts_read = pool.submit(client.run, "scontrol", "-o", "show", "partition")
        jobs_read = pool.submit((cache or JobsCache()).jobs, client, started) if with_jobs else None
        nodes, parts = nodes_read.result(), parts_read.result().stdout
        jobs, read_at = jobs_read.result() if jobs_read is not None else (None, None)
    if not with_jobs:
        return build_snapshot(nodes, parts, None, slurm_version=version, taken_at=started)
    return build_snapshot(nodes, parts, slurm_version=version, taken_at=started, jobs=jobs,
                          jobs_taken_at=None if read_at == started else read_at)


# one per (slurm.conf, max age, queue file, its max age) in a worker process
_CACHES: dict[tuple, JobsCache] = {}


def collect_snapshot_for(conf: str | None, jobs_max_age_s: float = 0.0, queue_file: str | None = None,
                         queue_file_max_age_s: float | None = None) -> Snapshot:
    """:func:`collect_snapshot` for the cluster of slurm.conf ``conf``; picklable, for a worker process, which
    keeps the jobs it read for ``jobs_max_age_s`` and takes them from ``queue_file`` (:class:`.shared.QueueFile`,
    the cycle's) while it is at most ``queue_file_max_age_s`` old (:class:`JobsCache`)."""
    cache = None
    if jobs_max_age_s > 0:
        key = (conf, jobs_max_age_s, queue_file, queue_file_max_age_s)
        cache = _CACHES.setdefault(key, JobsCache(jobs_max_age_s, QueueFile(queue_file) if queue_file else None,
                                                  queue_file_max_age_s))
    return collect_snapshot(SlurmClient(conf), cache=cache)


def _collect_prepared(conf: str | None, prepare: Callable[[Snapshot], Snapshot] | None,
                      jobs_max_age_s: float = 0.0, queue_file: str | None = None,
                      queue_file_max_age_s: float | None = None) -> Snapshot:
    snap = collect_snapshot_for(conf, jobs_max_age_s, queue_file, queue_file_max_age_s)
    return prepare(snap) if prepare is not None else snap


class ProcessCollector:
    """Builds snapshots in one worker process, so parsing Slurm's JSON never holds the daemon's GIL.

    Call it to get a Snapshot; a worker that died (killed, OOM) is replaced on the next call. ``close()``
    terminates the worker without waiting for a Slurm command that may hang. ``prepare`` (picklable) runs in
    the worker on each snapshot before it is sent back, e.g. to fill its memo with derived answers.
    ``jobs_max_age_s``: the worker reads the job queue at most that often (:class:`JobsCache`), from
    ``queue_file`` (the queue the cycle read, :mod:`.shared`) when that is young enough.
    """

    def __init__(self, conf: str | None, timeout: float = 120.0,
                 prepare: Callable[[Snapshot], Snapshot] | None = None, jobs_max_age_s: float = 0.0,
                 queue_file: str | None = None, queue_file_max_age_s: float | None = None):
        self.conf, self.timeout, self.prepare, self.jobs_max_age_s = conf, timeout, prepare, jobs_max_age_s
        self.queue_file, self.queue_file_max_age_s = queue_file, queue_file_max_age_s
        self._pool: ProcessPoolExecutor | None = None

    def __call__(self) -> Snapshot:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=die_with_parent, initargs=(os.getpid(),))
        try:
            return self._pool.submit(_collect_prepared, self.conf, self.prepare, self.jobs_max_age_s,
                                     self.queue_file, self.queue_file_max_age_s).result(timeout=self.timeout)
        except (BrokenProcessPool, FutureTimeout):
            self.close()
            raise

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.terminate()
            pool.shutdown(wait=False, cancel_futures=True)


class SnapshotRefresher:
    """Keeps :attr:`current` fresh by rebuilding it every ``interval`` seconds in a daemon thread.

    Readers take ``refresher.current`` (an immutable Snapshot swapped in one assignment), so they never wait
    for Slurm. A failed refresh keeps the previous snapshot and is logged once per failure streak.
    """

    def __init__(self, collect: Callable[[], Snapshot], interval: float = 5.0):
        self._collect, self.interval = collect, interval
        self.current: Snapshot = Snapshot.empty()
        self.failures = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def refresh_once(self) -> bool:
        """Rebuild now; True on success."""
        try:
            self.current = self._collect()
        except Exception as err:  # noqa: BLE001 - any failure (Slurm, parse, worker) keeps the old snapshot
            if not self.failures:
                log.warning("snapshot refresh failed (keeping the one from %.0f s ago): %s",
                            self.current.age_s(), err)
            self.failures += 1
            return False
        if self.failures:
            log.info("snapshot refresh works again after %d failures", self.failures)
        self.failures = 0
        return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="snapshot-refresh", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.refresh_once()
            self._stop.wait(self.interval)

    def stop(self, wait: float = 5.0) -> None:
        """Stop refreshing; waits at most ``wait`` seconds for a refresh under way (the thread is a daemon)."""
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=wait)
