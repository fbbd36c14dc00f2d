"""Parsers from Slurm's JSON/text output to snapshot records, tolerant of both supported versions.

- Slurm 22.05 (openapi v0.0.38): ``sinfo --json`` = ``{"nodes": [...]}`` with ``state: "idle"``,
  ``state_flags: [...]``, comma-separated ``features``; ``squeue --json`` with plain numbers and
  ``job_state: "PENDING"``.
- Slurm 24.11 (openapi v0.0.42): ``scontrol show nodes --json`` = ``{"nodes": [...]}`` with
  ``state: ["IDLE", "DRAIN"]`` and ``features`` as a list; numbers in ``squeue --json`` are
  ``{"set": bool, "infinite": bool, "number": n}``; ``job_state`` is a list.
- Partitions come from ``scontrol -o show partition`` text, which both versions print alike.

Unknown or missing fields become defaults; one malformed record is skipped (logged), never fatal.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import hostlist

from ..slurm.client import parse_scontrol_oneliner
from .arrays import task_count, task_range
from .gres import parse_gres, parse_tres_per_node
from .model import JobState, NodeState, PartitionState

log = logging.getLogger(__name__)
NO_VAL_MIN = 0xFFFFFFFE  # Slurm's NO_VAL/INFINITE (and their 64-bit forms) are at or above this


def number(value: Any) -> int | None:
    """A Slurm number in either form (``5``, ``{"set": true, "number": 5}``) or None if unset/infinite."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or value is None:
        return None
    try:
        num = int(value)
    except (TypeError, ValueError):
        return None
    return None if num >= NO_VAL_MIN else num


def words(value: Any) -> tuple[str, ...]:
    """A list of words from a list or a comma-separated string, without empties and '(null)'."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else str(value).split(",")
    return tuple(s for s in (str(i).strip() for i in items) if s and s != "(null)")


def text(value: Any) -> str:
    return "" if value is None or value == "(null)" else str(value)


def _node_state(raw: dict) -> tuple[str, tuple[str, ...]]:
    state = raw.get("state")
    flags = [f.lower() for f in words(raw.get("state_flags"))]
    if isinstance(state, list):  # 24.11: ["IDLE", "DRAIN"]; the first word is the base state
        states = [s.lower() for s in state] or ["unknown"]
        return states[0], tuple(states[1:] + flags)
    base, *more = (text(state) or "unknown").lower().split("+")
    return base.rstrip("*~#%!$@^-"), tuple(more + flags)


def parse_node(raw: dict) -> NodeState:
    """One node record of ``sinfo --json`` (22.05) or ``scontrol show nodes --json`` (23.02+)."""
    base, flags = _node_state(raw)
    features = words(raw.get("features"))
    return NodeState(
        name=str(raw["name"]), state=base, flags=flags,
        cpus=number(raw.get("cpus")) or 0, alloc_cpus=number(raw.get("alloc_cpus")) or 0,
        memory_mb=number(raw.get("real_memory")) or 0, alloc_memory_mb=number(raw.get("alloc_memory")) or 0,
        features=features, active_features=words(raw.get("active_features")) or features,
        gres=parse_gres(text(raw.get("gres"))), gres_used=parse_gres(text(raw.get("gres_used"))),
        partitions=words(raw.get("partitions")), weight=number(raw.get("weight")) or 1,
        reason=text(raw.get("reason")),
    )


def _first_state(value: Any) -> str:
    if isinstance(value, list):
        return str(value[0]).upper() if value else "UNKNOWN"
    return text(value).upper() or "UNKNOWN"


ACTIVE_STATES = ("PENDING", "RUNNING", "SUSPENDED", "CONFIGURING", "COMPLETING")  # the rest have ended


def parse_job(raw: dict) -> JobState:
    """One job record of ``squeue --json`` (v0.0.38 or v0.0.42)."""
    return JobState(
        job_id=int(number(raw["job_id"]) or 0), state=_first_state(raw.get("job_state")),
        partition=text(raw.get("partition")), user_id=number(raw.get("user_id")), name=text(raw.get("name")),
        features=text(raw.get("features")), cpus=number(raw.get("cpus")),
        node_count=number(raw.get("node_count")), memory_per_node_mb=number(raw.get("memory_per_node")),
        memory_per_cpu_mb=number(raw.get("memory_per_cpu")), time_limit_min=number(raw.get("time_limit")),
        gres=parse_tres_per_node(text(raw.get("tres_per_node"))), priority=number(raw.get("priority")),
        qos=text(raw.get("qos")), account=text(raw.get("account")), comment=text(raw.get("comment")),
        wckey=text(raw.get("wckey")), nodes=text(raw.get("nodes")), reason=text(raw.get("state_reason")),
        submit_time=number(raw.get("submit_time")), array_job_id=number(raw.get("array_job_id")) or None,
        **_array(raw), **_run_times(raw),
    )


def _array(raw: dict) -> dict:
    """A pending array's record (22.05 and 24.11: ``array_task_string`` "3-9%2", no task id): its tasks; a
    record left with one task is that task's, as ``squeue -r`` prints it."""
    task = number(raw.get("array_task_id"))
    tasks = task_range(text(raw.get("array_task_string"))) if task is None else ""
    if tasks.isdigit():
        task, tasks = int(tasks), ""
    return {"array_task_id": task, "array_tasks": tasks, "task_count": task_count(tasks) if tasks else 1}


def _run_times(raw: dict) -> dict:
    """start_time once the job has started, end_time once it has ended (before that Slurm's are estimates)."""
    state = _first_state(raw.get("job_state"))
    start, end = number(raw.get("start_time")) or None, number(raw.get("end_time")) or None
    ended = state not in ACTIVE_STATES
    return {"start_time": start if state != "PENDING" else None, "end_time": end if ended else None}


def parse_time_minutes(value: str) -> int | None:
    """Slurm time (``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``, ``INFINITE``) in whole minutes
    (seconds round up); None when unlimited."""
    value = value.strip()
    if not value or value.upper() in ("INFINITE", "UNLIMITED", "NONE"):
        return None
    days, dash, rest = value.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if dash:  # D-H[:M[:S]]
        hours, minutes, seconds = (parts + [0, 0])[:3]
    else:  # M, M:S, H:M:S
        hours, minutes, seconds = ([0] * (3 - len(parts)) + parts) if len(parts) == 3 else (0, parts[0], (parts + [0])[1])
    return int(days or 0) * 1440 + hours * 60 + minutes + (1 if seconds else 0)


def parse_partition_line(line: str) -> PartitionState:
    """One ``scontrol -o show partition`` record."""
    rec = parse_scontrol_oneliner(line)
    nodes = rec.get("Nodes", "")
    return PartitionState(
        name=rec["PartitionName"],
        nodes=tuple(hostlist.expand_hostlist(nodes)) if nodes and nodes != "(null)" else (),
        state=rec.get("State", "UP"), default=rec.get("Default", "NO").upper() == "YES",
        max_time_min=parse_time_minutes(rec.get("MaxTime", "UNLIMITED")),
        priority_tier=int(rec.get("PriorityTier", "1") or 1),
    )


def _each(records: Iterable[Any], parse, what: str) -> list:
    out = []
    for raw in records:
        try:
            out.append(parse(raw))
        except (KeyError, TypeError, ValueError) as err:
            log.warning("skipping a malformed %s record (%s): %.200r", what, err, raw)
    return out


def parse_nodes(doc: dict) -> list[NodeState]:
    """Nodes of a ``sinfo --json`` (22.05) or ``scontrol show nodes --json`` (23.02+) document."""
    return _each(doc.get("nodes") or [], parse_node, "node")


def parse_jobs(doc: dict, keep_finished: bool = False) -> list[JobState]:
    """Jobs of a ``squeue --json`` document; finished jobs are dropped unless ``keep_finished``."""
    jobs = _each(doc.get("jobs") or [], parse_job, "job")
    return jobs if keep_finished else [j for j in jobs if j.state in ACTIVE_STATES]


def parse_partitions(text_out: str) -> list[PartitionState]:
    return _each((ln for ln in text_out.splitlines() if ln.strip()), parse_partition_line, "partition")
