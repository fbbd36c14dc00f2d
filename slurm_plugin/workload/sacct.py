"""Readers of Slurm accounting history, so a site can replay its own jobs: ``sacct --json`` and ``sacct -P``.

Recommended export: ``sacct -a -X -P -S <start> -E <end> -o
JobID,User,Submit,Start,End,Timelimit,NNodes,NCPUS,ReqMem,ReqTRES,Constraints,QOS,State``. Job steps
(``123.batch``) are ignored; jobs that never started are skipped and counted. Run time = End - Start.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from ..site import ARCHES
from ..snapshot.constraint import parse_constraint
from .errors import WorkloadError
from .jobs import JobTable, Workload, arch_mask
from .limits import (MAX_DEVICES_PER_NODE, MAX_DURATION_S, MAX_JOBS, MAX_MEMORY_GB, MAX_NODES, MAX_PROCS,
                     MAX_TIME_S, check, read_text, text_lines)

REQUIRED = ("JobID", "Submit", "Start", "End", "Timelimit", "NNodes", "NCPUS")
_GRES = re.compile(r"gres/(\w+)(?::([\w.-]+))?=(\d+)")


def parse_timelimit(text: str) -> float | None:
    """Slurm time limit (``[D-]HH:MM:SS``, ``MM:SS``, minutes, UNLIMITED) in seconds; None if unlimited."""
    text = text.strip()
    if text.upper() in ("UNLIMITED", "INFINITE", "PARTITION_LIMIT", ""):
        return None
    if len(text) > 32 or not re.fullmatch(r"(\d+-)?\d+(:\d+){0,2}", text):
        raise ValueError(f"time limit {text[:40]!r} is not [D-]HH:MM:SS, MM:SS, minutes or UNLIMITED")
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [int(p) for p in text.split(":")]
    if len(parts) == 1:
        secs = parts[0] * 60 if days == 0 else parts[0] * 3600
    elif len(parts) == 2:
        secs = parts[0] * 3600 + parts[1] * 60 if days else parts[0] * 60 + parts[1]
    else:
        secs = parts[0] * 3600 + parts[1] * 60 + parts[2]
    return float(days * 86400 + secs)


def parse_mem_gb(text: str, ncpus: int, nnodes: int) -> float:
    """``ReqMem`` (``4000M``, ``4Gn``, ``2Gc``, ``16G``) as GB per node."""
    m = re.fullmatch(r"([\d.]+)([KMGT]?)([nc]?)", text.strip())
    if not m:
        return 0.0
    scale = {"K": 1 / 2**20, "M": 1 / 1024, "G": 1.0, "T": 1024.0, "": 1 / 1024}[m[2]]
    gb = float(m[1]) * scale
    return gb * ncpus / max(nnodes, 1) if m[3] == "c" else gb


def constraint_arch_mask(text: str) -> int:
    """Arch bitmask of a ``--constraint`` expression (``(aarch64|x86_64)&bigmem`` -> both arches; 0 = any):
    the arches a node may have and still match. Raises ValueError for a constraint no arch satisfies."""
    allowed = parse_constraint(text).allowed(ARCHES)
    if not allowed:
        raise ValueError(f"constraint {text!r} excludes every CPU arch")
    return 0 if allowed == set(ARCHES) else arch_mask(sorted(allowed))


def _ts(text: str) -> float | None:
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    if len(text) > 40:
        raise ValueError(f"time {text[:40]!r}... is not an ISO date")
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


class _Rows:
    """Accumulates jobs as columns plus the GRES name/type vocabularies."""

    def __init__(self) -> None:
        self.cols: dict[str, list] = {k: [] for k in (
            "id", "submit", "run", "limit", "nodes", "cores", "mem_gb", "gres_name", "gres_type",
            "gres_count", "arch_mask", "user", "qos_priority")}
        self.gres_names: list[str] = []
        self.gres_types: list[str] = []
        self.users: dict[str, int] = {}
        self.skipped: dict[str, int] = {}
        self.waits: dict[int, float] = {}

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def add(self, *, job_id: int, user: str, submit: float, start: float | None, end: float | None,
            limit: float | None, nodes: int, cpus: int, mem_gb: float, tres: str, constraint: str,
            where: tuple[str, int | None]) -> None:
        """One job; ``where`` is (file, line) for a bound's error (a line of -P output, or None for JSON)."""
        if start is None or end is None:
            self.skip("never started or still running")
            return
        for what, value, lo, hi in (("Submit", submit, 0, MAX_TIME_S), ("Start", start, 0, MAX_TIME_S),
                                    ("End", end, 0, MAX_TIME_S), ("NNodes", nodes, 0, MAX_NODES),
                                    ("NCPUS", cpus, 0, MAX_PROCS), ("memory (GB)", mem_gb, 0, MAX_MEMORY_GB),
                                    ("Timelimit", limit if limit is not None else 0, 0, MAX_DURATION_S)):
            check(value, f"{what} of job {job_id}", *where, lo, hi)
        if end - start > MAX_DURATION_S:
            raise WorkloadError(where[0], f"job {job_id} ran {end - start:g} s (End - Start), more than "
                                          f"{MAX_DURATION_S:g}", where[1])
        if len(self.cols["id"]) >= MAX_JOBS:
            raise WorkloadError(where[0], f"more than {MAX_JOBS:,} jobs: split the export", where[1])
        gname = gtype = -1
        gcount = 0
        m = _GRES.search(tres or "")
        if m:
            gname = self._index(self.gres_names, m[1])
            gtype = self._index(self.gres_types, m[2]) if m[2] else -1
            gcount = -(-int(m[3][:20]) // max(nodes, 1))
            check(gcount, f"{m[1]} per node of job {job_id}", *where, 0, MAX_DEVICES_PER_NODE)
        run = max(0.0, end - start)
        self.waits[job_id] = max(0.0, start - submit)
        c = self.cols
        c["id"].append(job_id)
        c["submit"].append(submit)
        c["run"].append(run)
        c["limit"].append(limit if limit is not None else max(run, 1.0))
        c["nodes"].append(max(nodes, 1))
        c["cores"].append(max(1, -(-cpus // max(nodes, 1))))
        c["mem_gb"].append(mem_gb)
        c["gres_name"].append(gname)
        c["gres_type"].append(gtype)
        c["gres_count"].append(gcount)
        c["arch_mask"].append(constraint_arch_mask(constraint))
        c["user"].append(self.users.setdefault(user, len(self.users)))
        c["qos_priority"].append(0.0)

    @staticmethod
    def _index(vocab: list[str], name: str) -> int:
        if name not in vocab:
            vocab.append(name)
        return vocab.index(name)

    def workload(self, path: Path) -> Workload:
        if not self.cols["id"]:
            raise WorkloadError(str(path), "no finished jobs in the accounting export")
        jobs = JobTable.build(self.cols, gres_names=tuple(self.gres_names), gres_types=tuple(self.gres_types))
        t0 = jobs.submit.min()
        jobs.submit -= t0
        return Workload(name=path.name, jobs=jobs, skipped=self.skipped, recorded_wait=self.waits)


def sacct_header(path: Path) -> tuple[list[str], Iterator[tuple[int, str]]]:
    """The column names of an ``sacct -P`` file and its remaining (line number, line) pairs; WorkloadError
    when the file is empty."""
    lines = text_lines(path)
    first = next(lines, None)
    if first is None:
        raise WorkloadError(str(path), "empty file")
    return first[1].split("|"), lines


def read_sacct_parsable(path: str | Path) -> Workload:
    """Read ``sacct -P`` output (``|``-separated, header line first)."""
    path = Path(path)
    header, lines = sacct_header(path)
    missing = [k for k in REQUIRED if k not in header]
    if missing:
        raise WorkloadError(str(path), f"sacct -P header lacks {', '.join(missing)} (has: {', '.join(header)})", 1)
    rows = _Rows()
    for lineno, line in lines:
        if not line.strip():
            continue
        rec = dict(zip(header, line.split("|")))
        if len(rec) != len(header) or len(line.split("|")) != len(header):
            raise WorkloadError(str(path), f"{len(line.split('|'))} fields, header has {len(header)}", lineno)
        if "." in rec["JobID"]:
            continue
        try:
            nodes, cpus = int(rec["NNodes"]), int(rec["NCPUS"])
            rows.add(job_id=int(rec["JobID"].split("_")[0].split("+")[0]), user=rec.get("User", ""),
                     submit=_ts(rec["Submit"]), start=_ts(rec["Start"]), end=_ts(rec["End"]),
                     limit=parse_timelimit(rec["Timelimit"]), nodes=nodes, cpus=cpus,
                     mem_gb=parse_mem_gb(rec.get("ReqMem", ""), cpus, nodes), tres=rec.get("ReqTRES", ""),
                     constraint=rec.get("Constraints", ""), where=(str(path), lineno))
        except WorkloadError:
            raise
        except (ValueError, TypeError, OverflowError) as err:
            raise WorkloadError(str(path), f"bad record: {err}", lineno) from None
    return rows.workload(path)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number a job can have")


def _number(v) -> float | None:
    """sacct --json numbers are plain (<= 22.05) or ``{"set": bool, "infinite": bool, "number": n}``."""
    if isinstance(v, dict):
        return float(v["number"]) if v.get("set", True) and not v.get("infinite") else None
    return None if v is None else float(v)


def _tres_text(tres: list[dict]) -> str:
    return ",".join(f"{t.get('type')}/{t.get('name')}={t.get('count')}" if t.get("name") else
                    f"{t.get('type')}={t.get('count')}" for t in tres or [])


def sacct_jobs(path: Path) -> list:
    """The ``jobs`` list of an ``sacct --json`` file; WorkloadError (with the file, and the line for bad JSON)
    when it is not JSON, holds NaN/Infinity or a number too long to convert, or has no ``jobs`` list."""
    try:
        data = json.loads(read_text(path), parse_constant=_no_constant)
    except json.JSONDecodeError as err:
        raise WorkloadError(str(path), f"not JSON: {err.msg}", err.lineno) from None
    except ValueError as err:  # NaN/Infinity, or an integer of thousands of digits
        raise WorkloadError(str(path), f"not a usable JSON number: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise WorkloadError(str(path), "no 'jobs' list: is this `sacct --json` output?")
    return data["jobs"]


def read_sacct_json(path: str | Path) -> Workload:
    """Read ``sacct --json`` output (Slurm 21.08 .. 24.x field layouts)."""
    path = Path(path)
    rows = _Rows()
    for i, job in enumerate(sacct_jobs(path)):
        try:
            t = job["time"]
            limit = _number(t.get("limit"))
            cpus = int(_number(job.get("required", {}).get("CPUs")) or 1)
            nodes = int(str(job.get("allocation_nodes", job.get("nodes", 1))).split()[0]) \
                if str(job.get("allocation_nodes", "1")).isdigit() else 1
            start, end = _number(t.get("start")), _number(t.get("end"))
            rows.add(job_id=int(job["job_id"]), user=str(job.get("user", "")), submit=_number(t["submission"]),
                     start=start or None, end=end or None, limit=limit * 60 if limit is not None else None,
                     nodes=nodes, cpus=cpus, mem_gb=0.0,
                     tres=_tres_text(job.get("tres", {}).get("requested", [])),
                     constraint=str(job.get("constraints", "")), where=(f"{path} (job #{i})", None))
        except WorkloadError:
            raise
        except (KeyError, ValueError, TypeError, OverflowError) as err:
            raise WorkloadError(str(path), f"job #{i} ({job.get('job_id', '?') if isinstance(job, dict) else '?'}): bad or missing field {err}") \
                from None
    return rows.workload(path)
