"""One job-queue read for the suite's two processes: the cycle publishes the queue it read, the daemon reads it.

The whole queue is the costly read for slurmctld (every job record under its job read lock: ~1 s of its time at
100,000 jobs). The cycle reads it every cycle anyway; the admission daemon needs it only for its metrics (pending
jobs, oldest wait, SLA attainment: at most ``jobs_refresh_s`` old). So the cycle writes the jobs it read to a file
(``hetsched cycle run --queue-file F``) and the daemon's snapshot worker takes them from there while they are
young enough (``queue_file: F``, ``queue_file_max_age_s`` in hetsched.yaml; :class:`~.collect.JobsCache`), reading
Slurm itself only when the file is missing, too old or not trusted: with both on, slurmctld answers one full
queue read per cycle instead of two.

The file is a pickle, so it is read only when the file and its directory belong to this process's user (or
root) and nobody else may write them (the shim's socket check, ``job_submit.lua``); both processes run as
SlurmUser on a site. Written atomically: a reader sees the previous file or the next, never a part.
"""

from __future__ import annotations

import logging
import os
import pickle
import stat
from pathlib import Path

from ..fsio import write_file_atomic
from .model import JobState

log = logging.getLogger(__name__)
FORMAT = "hetsched-queue/1"


class QueueFile:
    """The job queue handed from the process that read it to another on the same host (see the module doc)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._refused: str | None = None  # the last reason a read was refused (logged once per reason)

    def publish(self, jobs: tuple[JobState, ...], read_at: float) -> None:
        """Write ``jobs`` (every job Slurm reported, as read at ``read_at``, epoch seconds), replacing the file."""
        blob = pickle.dumps({"format": FORMAT, "read_at": float(read_at), "jobs": tuple(jobs)},
                            protocol=pickle.HIGHEST_PROTOCOL)
        write_file_atomic(self.path, blob, mode=0o640)

    def read(self, max_age_s: float, now: float) -> tuple[tuple[JobState, ...], float] | None:
        """(jobs, read_at) when the file exists, is trusted and was read from Slurm at most ``max_age_s`` before
        ``now``; None otherwise (the caller reads Slurm itself; why is logged once per reason)."""
        why = self._untrusted()
        if why is None:
            try:
                doc = pickle.loads(self.path.read_bytes())
            except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError) as err:
                why = f"unreadable ({type(err).__name__}: {err})"
            else:
                if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                    why = "not a queue file of this version"
                elif now - doc["read_at"] > max_age_s:
                    return None  # old: the cycle is slower than the daemon's period, or not running (not an error)
                else:
                    self._refused = None
                    return doc["jobs"], doc["read_at"]
        if why is not None and why != self._refused:  # missing: the cycle has not published yet (not a fault)
            log.log(logging.INFO if why == "missing" else logging.WARNING,
                    "queue file %s not used (%s): reading the queue from Slurm", self.path, why)
        self._refused = why
        return None

    def _untrusted(self) -> str | None:
        """Why the file may not be unpickled (None: it may): missing, or it or its directory writable by someone
        other than this user or root."""
        me = os.geteuid()
        for what in (self.path, self.path.parent):
            try:
                st = what.stat()
            except FileNotFoundError:
                return "missing"
            except OSError as err:
                return f"cannot stat {what}: {err.strerror}"
            if st.st_uid not in (me, 0):
                return f"{what} belongs to uid {st.st_uid}, not this user ({me}) or root"
            if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return f"{what} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
        return None
