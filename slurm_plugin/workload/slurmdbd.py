"""A site's job history straight from slurmdbd (``sacct``): the export the twin replays and the records the SLA
report measures.

For the tuner (``hetsched tune``, slurm_plugin/tune/): :func:`export_history` writes ``sacct -a -X -P`` with
:data:`HISTORY_FIELDS` (the columns :func:`~.sacct.read_sacct_parsable` reads, plus Account, QOS and State)
into a file, atomically; ``hetsched accounting export --since 30d -o history.txt`` is the command, and
``hetsched tune --history history.txt`` replays it (the twin section records the file's path and sha256, so
the export is kept as a file rather than read into memory). :func:`load_history` does both in one call for
code that wants the :class:`~.jobs.Workload` (jobs that never started are skipped and counted, as for any
sacct export). Times are read as UTC: run sacct with ``TZ=UTC`` (the container cluster's containers are).

:func:`read_waits` gives every job submitted in a window with its QOS and wait (the SLA report's input).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from ..fsio import write_file_atomic
from ..slurm import SlurmClient
from .errors import WorkloadError
from .jobs import Workload
from .sacct import _ts, read_sacct_parsable

HISTORY_FIELDS = ("JobID", "User", "Account", "QOS", "Submit", "Start", "End", "Timelimit", "NNodes", "NCPUS",
                  "ReqMem", "ReqTRES", "Constraints", "State")
WAIT_FIELDS = ("JobID", "QOS", "Submit", "Start", "State")
_SPAN = re.compile(r"^(\d{1,5})([dhm])$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?)?$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def sacct_time(text: str) -> str:
    """``7d`` / ``12h`` / ``30m`` (before now) or an ISO date/time -> sacct's -S/-E value; ValueError names the
    accepted forms."""
    text = text.strip()
    if m := _SPAN.match(text):
        return f"now-{int(m[1])}{_UNITS[m[2]]}"
    if text == "now" or _DATE.match(text):
        return text
    raise ValueError(f"time {text[:40]!r} is not Nd, Nh, Nm (before now), 'now' or YYYY-MM-DD[THH:MM[:SS]]")


def sacct_window(client: SlurmClient, fields: tuple[str, ...], since: str, until: str, header: bool) -> str:
    """`sacct -a -X -P` of the jobs of the window (``since``/``until``: Nd, Nh, Nm before now or a date), the
    ``fields`` in order, with the header line if ``header``."""
    argv = ["sacct", "-a", "-X", "-P", "-S", sacct_time(since), "-E", sacct_time(until), "-o", ",".join(fields)]
    return client.run(*argv, *([] if header else ["-n"]), timeout=300).stdout


def export_history(client: SlurmClient, out: str | Path, since: str = "30d", until: str = "now") -> int:
    """Write slurmdbd's jobs submitted between ``since`` and ``until`` to ``out`` (sacct -P with its header,
    :data:`HISTORY_FIELDS`); returns the number of jobs written. Raises SlurmError if sacct fails."""
    text = sacct_window(client, HISTORY_FIELDS, since, until, header=True)
    write_file_atomic(Path(out), text if text.endswith("\n") or not text else text + "\n")
    return max(0, len([line for line in text.splitlines() if line.strip()]) - 1)


def load_history(client: SlurmClient, out: str | Path, since: str = "30d", until: str = "now") -> Workload:
    """:func:`export_history` to ``out``, then read it as the simulator's workload."""
    export_history(client, out, since, until)
    return read_sacct_parsable(out)


@dataclass(frozen=True)
class JobWait:
    """One job of the window: its QOS, submit time and wait (None while it has not started; epoch seconds)."""

    job_id: str
    qos: str
    submit: float
    wait_s: float | None
    state: str


def parse_waits(text: str, where: str = "sacct") -> list[JobWait]:
    """``sacct -n -P -o JobID,QOS,Submit,Start,State`` lines -> jobs (pure); a bad line raises WorkloadError."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != len(WAIT_FIELDS):
            raise WorkloadError(where, f"{len(parts)} fields, want {len(WAIT_FIELDS)} ({','.join(WAIT_FIELDS)})",
                                lineno)
        job, qos, submit, start, state = parts
        try:
            t_submit, t_start = _ts(submit), _ts(start)
        except ValueError as err:
            raise WorkloadError(where, f"job {job}: {err}", lineno) from None
        if t_submit is None:
            raise WorkloadError(where, f"job {job}: no submit time", lineno)
        out.append(JobWait(job, qos, t_submit, None if t_start is None else max(0.0, t_start - t_submit),
                           state.split()[0] if state else ""))
    return out


def read_waits(client: SlurmClient, since: str = "7d", until: str = "now") -> tuple[list[JobWait], float]:
    """Every job slurmdbd has for the window with its wait, and the time it was read (epoch seconds)."""
    now = time.time()
    return parse_waits(sacct_window(client, WAIT_FIELDS, since, until, header=False)), now
