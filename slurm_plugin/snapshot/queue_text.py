"""The job queue from ``squeue -O`` text: what the snapshot needs of every job at a fraction of the cost of
``squeue --json`` (which on 22.05 spends minutes building the JSON of 100,000 jobs; see results/cycle).

One ``squeue --all -t all -r -h -O`` call with only the fields :class:`~.model.JobState` needs. Each field ends
with a separator made of a control character and a random nonce drawn for this call, each record with another,
so no job name or comment (users write those, newlines included) can end a field or a record early: a record
that does not split into exactly the fields asked for raises :class:`QueueTextError` and the caller reads the
JSON instead. ``-r`` prints a pending array's record once per task, all with the record's own JobID; those lines
are one record again here (``array_tasks``, ``task_count``), as slurmctld keeps it. (Without ``-r`` squeue
merges the pending tasks that have records of their own into one line, losing their ids.)

What the text cannot say directly is derived exactly: whether MinMemory is per node or per CPU comes from the
requested TRES memory (``tres-alloc`` of a pending job is what it asks; the two readings give the same total
when they cannot be told apart). Times are local, as squeue prints them and ``datetime`` reads them.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import secrets
from functools import lru_cache

from ..slurm import SlurmError
from .arrays import task_expr
from .gres import parse_tres_per_node
from .model import JobState
from .parse import ACTIVE_STATES, parse_jobs, parse_time_minutes

log = logging.getLogger(__name__)
# squeue -O field names (22.05 and 24.11), in the order of :func:`_record`'s unpacking
FIELDS = ("JobID", "ArrayJobID", "ArrayTaskID", "State", "Partition", "UserID", "NumCPUs", "NumNodes", "MinMemory",
          "tres-alloc", "TimeLimit", "tres-per-node", "PriorityLong", "QOS", "Account", "WCKey", "NodeList",
          "Reason", "SubmitTime", "StartTime", "EndTime", "Feature", "Name", "Comment")
_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024, "P": 1024 ** 3}
_MEM = re.compile(r"^([\d.]+)([KMGTP]?)$")
_NONE = ("", "(null)", "N/A", "n/a", "None", "Unknown", "INVALID")


class QueueTextError(ValueError):
    """squeue's text could not be read as the records asked for (the caller falls back to ``squeue --json``)."""


class SteppedArrayError(QueueTextError):
    """A pending array whose tasks ``squeue -r`` may have printed one short (the caller reads the JSON instead).

    Slurm (22.05.8 and 24.11.5 here) keeps a task set that is one arithmetic run of 7 or more ids with a step
    above 1 as ``a-b:s`` (``1-13:2``), and ``squeue -r`` expands that without its last id (six lines for
    ``1-13:2``; a set with anything else, ``0,9-99:3``, is written as a list and expands whole). Six or more
    lines in one such run cannot tell a cut run from a whole one, so a pending array's are read from the JSON (an
    ended one is kept as read: its tasks decide nothing)."""


def separators() -> tuple[str, str]:
    """(field end, record end) for one call: the unit separator, and the record separator with a nonce drawn
    now (a user's text with extra unit separators only changes a record's field count, which is checked; a
    record end it could fake would end a record early with fields that check out)."""
    return "\x1f", f"\x1e{secrets.token_hex(6)}"


def squeue_argv(field_end: str, record_end: str) -> list[str]:
    """The squeue command that prints every job record Slurm remembers in this module's format."""
    spec = ",".join(f"{name}:{field_end}" for name in FIELDS[:-1]) + f",{FIELDS[-1]}:{record_end}"
    return ["squeue", "--all", "-t", "all", "-r", "-h", "-O", spec]


def _text(value: str) -> str:
    return "" if value in ("(null)", "N/A") else value


def _int(value: str) -> int | None:
    value = value.split("-")[0]  # NumNodes of a range request ("1-2"): the minimum, as the JSON's node_count
    return int(value) if value.isdigit() else None


def _mb(value: str) -> int | None:
    """``1G``, ``1024M``, ``500``, ``1.50G`` -> MiB."""
    m = _MEM.match(value.strip())
    return round(float(m[1]) * _UNITS[m[2] or "M"]) if m else None


@lru_cache(maxsize=65536)
def _epoch(value: str) -> int | None:
    """squeue's local ``2026-12-02T02:21:12`` as a Unix time (a queue repeats many; cached)."""
    if value in _NONE:
        return None
    return int(dt.datetime.fromisoformat(value).timestamp())


@lru_cache(maxsize=4096)
def _memory(min_mem: str, tres: str, nodes: int | None, cpus: int | None) -> tuple[int | None, int | None]:
    """(per node, per CPU) MiB from MinMemory and the TRES memory the job asks (``cpu=4,mem=8G,node=1``)."""
    per = _mb(min_mem)
    if not per:
        return None, None
    asked = next((_mb(t[4:]) for t in tres.split(",") if t.startswith("mem=")), None)
    if asked is not None and cpus and asked == per * cpus:  # also when per node would give it: Slurm's default
        return None, per                                     # is DefMemPerCPU, as the JSON then says
    return per, None


@lru_cache(maxsize=4096)
def _gres(text: str) -> tuple:
    return parse_tres_per_node(_text(text))


@lru_cache(maxsize=4096)
def _limit(text: str) -> int | None:
    return parse_time_minutes(text) if text not in _NONE else None


def _record(fields: list[str]) -> JobState:
    (job_id, array_job, array_task, state, partition, user, cpus, nodes, min_mem, tres, limit, gres, priority, qos,
     account, wckey, node_list, reason, submit, start, end, features, name, comment) = fields
    cpus_n, nodes_n = _int(cpus), _int(nodes)
    per_node, per_cpu = _memory(min_mem, tres, nodes_n, cpus_n)
    array_id, task = _int(array_job) or None, _int(array_task)
    ended = state not in ACTIVE_STATES
    return JobState(
        job_id=int(job_id), state=state.upper(), partition=_text(partition), user_id=_int(user), name=_text(name),
        features=_text(features), cpus=cpus_n, node_count=nodes_n, memory_per_node_mb=per_node,
        memory_per_cpu_mb=per_cpu, time_limit_min=_limit(limit),
        gres=_gres(gres), priority=_int(priority), qos=_text(qos), account=_text(account),
        comment=_text(comment), wckey=_text(wckey), nodes=_text(node_list), reason=_text(reason),
        submit_time=_epoch(submit), array_job_id=array_id if task is not None else None,
        array_task_id=task, start_time=_epoch(start) if state != "PENDING" else None,
        end_time=_epoch(end) if ended else None)


def parse_squeue_text(out: str, field_end: str, record_end: str) -> list[JobState]:
    """Every job record of :func:`squeue_argv`'s output, a pending array's lines folded into one record.

    Raises :class:`QueueTextError` naming the record when one does not have exactly the fields asked for."""
    records = out.split(record_end)
    if records[-1].strip():
        raise QueueTextError(f"squeue output does not end with a record: {records[-1][:200]!r}")
    jobs: list[JobState] = []
    tasks: dict[int, list[int]] = {}  # JobID -> the task ids of its lines, when it printed more than one
    first: dict[int, int] = {}  # JobID -> index in jobs
    for n, rec in enumerate(records[:-1], 1):
        fields = rec.lstrip("\n").split(field_end)
        if len(fields) != len(FIELDS):
            raise QueueTextError(f"squeue record {n} has {len(fields)} fields, not {len(FIELDS)}: {rec[:200]!r}")
        try:
            job_id = int(fields[0])
            if job_id in first:  # another task line of a pending array's record
                tasks.setdefault(job_id, [jobs[first[job_id]].array_task_id]).append(_int(fields[2]))
                continue
            job = _record(fields)
        except ValueError as err:
            raise QueueTextError(f"squeue record {n}: {err}: {rec[:200]!r}") from None
        first[job_id] = len(jobs)
        jobs.append(job)
    for job_id, ids in tasks.items():
        if None in ids:
            raise QueueTextError(f"squeue printed job {job_id} {len(ids)} times without task ids")
        if _one_stepped_run(ids) and len(ids) >= 6 and jobs[first[job_id]].state == "PENDING":  # ended: kept
            raise SteppedArrayError(f"pending array {job_id}: tasks {task_expr(ids)}, which squeue -r may print "
                                    "one short")
        job = jobs[first[job_id]]
        jobs[first[job_id]] = JobState(**{**job.__dict__, "array_task_id": None, "array_tasks": task_expr(ids),
                                          "task_count": len(ids)})
    return jobs


def _one_stepped_run(ids: list[int]) -> bool:
    """True when the ids are one arithmetic run with a step above 1 (1, 3, 5, 7)."""
    ids = sorted(ids)
    return len(ids) > 1 and ids[1] - ids[0] > 1 and all(b - a == ids[1] - ids[0] for a, b in zip(ids, ids[1:]))


def read_jobs(client) -> list[JobState]:
    """Every job record Slurm remembers, from :func:`squeue_argv`'s text; from ``squeue --json`` when the text
    cannot be read (:class:`QueueTextError`) or squeue refuses the format (a Slurm without one of the fields),
    logged. Raises SlurmError if Slurm fails."""
    field_end, record_end = separators()
    try:
        out = client.run(*squeue_argv(field_end, record_end)).stdout
        return parse_squeue_text(out, field_end, record_end)
    except (QueueTextError, SlurmError) as err:
        if isinstance(err, SlurmError) and "format" not in err.stderr.lower():
            raise
        log.log(logging.INFO if isinstance(err, SteppedArrayError) else logging.WARNING,
                "reading the queue from squeue --json instead: %s", err)
        return parse_jobs(client.squeue(), keep_finished=True)
