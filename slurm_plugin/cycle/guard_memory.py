"""What the live guard remembers between cycles: the policy it is watching and the outcome of its jobs so far.

Each cycle :func:`observe` folds the snapshot into the memory: jobs submitted since the policy went live are
followed from submit to end (``Snapshot.jobs`` while pending/running, ``Snapshot.finished`` once ended). An
ended job's bounded slowdown and wait are added to running sums and the job is forgotten, so the memory stays
as small as the queue. :func:`measure` gives the period's live outcome as **lower bounds**: exact for ended
jobs; for a running job the least bounded slowdown its run (between its elapsed time and its limit) can give;
for a pending job its wait so far. So a live figure above the prediction is evidence, never an artefact of
jobs not having finished yet. Persisted as ``guard-state.json`` in the cycle's state directory.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..fsio import load_state, state_fields, write_file_atomic
from ..snapshot import Snapshot
from ..snapshot.model import JobState

BSLD_THRESHOLD_S = 10.0  # as the simulator's metrics (sim/metrics.py), so live and twin figures compare


def bsld(wait: float, run: float) -> float:
    """Bounded slowdown: max(1, (wait + run) / max(run, 10 s))."""
    return max(1.0, (wait + run) / max(run, BSLD_THRESHOLD_S))


def least_bsld(wait: float, run_min: float, run_max: float | None) -> float:
    """The least bounded slowdown for a run anywhere in [run_min, run_max] (None: no limit). It rises with the
    run up to the threshold and falls after it, so the least is at one of the ends."""
    far = 1.0 if run_max is None or math.isinf(run_max) else bsld(wait, max(run_max, run_min))
    return min(bsld(wait, run_min), far)


@dataclass(frozen=True)
class OpenJob:
    """A job of the period not yet ended: submit time, start time once started, time limit (s), run seen."""

    submit: float
    start: float | None = None
    limit_s: float | None = None
    seen_run_s: float = 0.0


@dataclass(frozen=True)
class LiveOutcome:
    """The period's outcome so far: jobs counted (``ended`` of them exactly), and lower bounds of the averages."""

    jobs: int = 0
    ended: int = 0
    avg_bsld: float | None = None
    avg_wait_s: float | None = None

    def get(self, metric: str) -> float | None:
        return getattr(self, metric)


@dataclass(frozen=True)
class GuardMemory:
    """``policy_sha256``: the active policy's content digest; ``since``: when this cycle first ran it. ``ended``,
    ``sum_bsld``, ``sum_wait_s``: ended jobs of the period; ``open``: job id -> :class:`OpenJob`; ``settled``:
    ended jobs already counted (or dropped) while Slurm still lists them. ``last``: the
    last cycle's outcome and verdict (what ``hetsched why policy`` shows)."""

    policy_sha256: str = ""
    since: float = 0.0
    ended: int = 0
    sum_bsld: float = 0.0
    sum_wait_s: float = 0.0
    open: dict[int, OpenJob] = field(default_factory=dict)
    settled: tuple[int, ...] = ()  # ended jobs already looked at that Slurm still lists in its finished jobs
    last: dict = field(default_factory=dict)

    def watching(self, sha256: str, now: float) -> GuardMemory:
        """This memory if it watches ``sha256``, else a fresh period for it starting ``now``."""
        return self if self.policy_sha256 == sha256 else GuardMemory(sha256, now)


def _open_job(job: JobState, before: OpenJob | None, now: float) -> OpenJob:
    limit = None if job.time_limit_min is None else 60.0 * job.time_limit_min
    start = float(job.start_time) if job.start_time else None
    seen = max(now - start, before.seen_run_s if before else 0.0) if start is not None else 0.0
    return OpenJob(float(job.submit_time or 0), start, limit, seen)


def _ran(job: JobState) -> bool:
    return bool(job.start_time and job.end_time and job.nodes)  # a job cancelled while pending has no nodes


def observe(memory: GuardMemory, snapshot: Snapshot) -> GuardMemory:
    """``memory`` with ``snapshot`` folded in (pure). Jobs submitted before ``memory.since`` are not the
    policy's (one submitted in its second is: Slurm keeps whole seconds). An ended job counts once (``settled`` remembers it while Slurm still lists it); one gone from
    Slurm without being seen to end counts with its run bounded by when it was last seen running and when it
    was found gone; one that never started (cancelled while pending) is dropped."""
    now, since = snapshot.taken_at, math.floor(memory.since)  # Slurm's submit times are whole seconds
    ended, sum_bsld, sum_wait = memory.ended, memory.sum_bsld, memory.sum_wait_s
    still = {j.job_id: _open_job(j, memory.open.get(j.job_id), now) for j in snapshot.jobs
             if j.submit_time is not None and j.submit_time >= since}
    done = {j.job_id: j for j in snapshot.finished}
    settled = set(memory.settled)
    for job_id, rec in memory.open.items():
        if job_id in still:
            continue
        fin = done.get(job_id)
        settled.add(job_id)
        if (fin is not None and not _ran(fin)) or (fin is None and rec.start is None):
            continue  # never started
        if fin is not None:
            wait = fin.start_time - rec.submit
            one = bsld(wait, fin.end_time - fin.start_time)
        else:
            wait, one = rec.start - rec.submit, least_bsld(rec.start - rec.submit, rec.seen_run_s, now - rec.start)
        ended, sum_bsld, sum_wait = ended + 1, sum_bsld + one, sum_wait + max(wait, 0.0)
    for job in done.values():  # ended between two cycles, never seen open
        if job.job_id not in settled and job.submit_time is not None and job.submit_time >= since \
                and _ran(job):
            wait = job.start_time - job.submit_time
            ended, sum_bsld, sum_wait = (ended + 1, sum_bsld + bsld(wait, job.end_time - job.start_time),
                                         sum_wait + max(wait, 0.0))
        settled.add(job.job_id)
    return dataclasses.replace(memory, ended=ended, sum_bsld=sum_bsld, sum_wait_s=sum_wait, open=still,
                               settled=tuple(sorted(settled & set(done))))


def measure(memory: GuardMemory, now: float) -> LiveOutcome:
    """The period's live outcome at ``now``: lower bounds of average bounded slowdown and wait (see module)."""
    n, total_bsld, total_wait = memory.ended, memory.sum_bsld, memory.sum_wait_s
    for rec in memory.open.values():
        if rec.start is None:
            wait = max(now - rec.submit, 0.0)
            one = least_bsld(wait, 0.0, rec.limit_s)
        else:
            wait = max(rec.start - rec.submit, 0.0)
            one = least_bsld(wait, max(rec.seen_run_s, now - rec.start), rec.limit_s)
        n, total_bsld, total_wait = n + 1, total_bsld + one, total_wait + wait
    if not n:
        return LiveOutcome()
    return LiveOutcome(n, memory.ended, total_bsld / n, total_wait / n)


def memory_to_json(memory: GuardMemory) -> dict:
    data = dataclasses.asdict(memory)
    data["open"] = {str(k): dataclasses.asdict(v) for k, v in memory.open.items()}
    return data


def memory_from_json(data: object) -> GuardMemory:
    """A :class:`GuardMemory` from JSON; TypeError/ValueError/KeyError name what is wrong."""
    data = state_fields(data, GuardMemory)
    opened = {int(k): OpenJob(**v) for k, v in (data.get("open") or {}).items()}
    memory = GuardMemory(str(data.get("policy_sha256", "")), float(data.get("since", 0.0)), int(data.get("ended", 0)),
                         float(data.get("sum_bsld", 0.0)), float(data.get("sum_wait_s", 0.0)), opened,
                         tuple(int(i) for i in data.get("settled") or ()), dict(data.get("last") or {}))
    if memory.ended < 0 or not all(math.isfinite(x) for x in (memory.since, memory.sum_bsld, memory.sum_wait_s)):
        raise ValueError("counts and sums must be finite and not negative")
    return memory


def load_guard_memory(path: Path) -> GuardMemory:
    return load_state(path, memory_from_json, GuardMemory, "guard state")


def save_guard_memory(path: Path, memory: GuardMemory) -> None:
    write_file_atomic(path, json.dumps(memory_to_json(memory), indent=1, sort_keys=True) + "\n")
