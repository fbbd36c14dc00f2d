"""What finished jobs asked for and what they used, for vertical right-sizing (``hetsched scale rightsize``).

Sources (one per job, totals over the whole job):

- ``sacct -P`` with, besides the columns :mod:`.sacct` reads, ``Elapsed`` (or ``ElapsedRaw``), ``TotalCPU``,
  ``MaxRSS`` (on step lines), optionally ``NTasks`` (step lines), ``ReqCPUS``/``ReqMem``, ``Comment``,
  ``WCKey``, ``Account``. Recommended: ``sacct -a -P -S <start> -E <end> -o JobID,State,Elapsed,TotalCPU,
  NCPUS,NNodes,ReqMem,MaxRSS,NTasks,Comment,WCKey,Account`` (no ``-X``: MaxRSS lives on the steps). Memory
  used = the largest step's MaxRSS x its tasks (an upper bound: MaxRSS is the biggest task's).
- ``sacct --json``: ``time.elapsed``, ``time.total``, ``required.CPUs``, ``required.memory`` (MB, per node),
  ``steps[].tres.requested.max`` memory; comment/wckey/account.
- SWF: average CPU time per processor (field 6), used and requested memory per processor (fields 7, 10), the
  queue (field 15, named by the header's ``Queue:`` lines) as the workload class.

Class of a sacct job: ``class=NAME`` in its comment, else its WCKey (``class=`` prefix removed), else its
account - the same sources admission reads (:mod:`slurm_plugin.admission.classify`). Jobs that did not
complete (state other than COMPLETED) or ran under ``min_elapsed_s`` are skipped and counted: a crashed or
trivial job says nothing about what the class needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..tags import comment_tags
from .errors import WorkloadError
from .limits import MAX_DURATION_S, MAX_MEMORY_GB, MAX_NODES, MAX_PROCS, check, text_lines
from .sacct import _number, sacct_header, sacct_jobs, parse_mem_gb, parse_timelimit
from .swf import _parse


@dataclass
class UsageHistory:
    """One entry per finished job. Memory in MB, times in seconds, both totals over the job; NaN = unknown.

    ``req_cpus``: CPUs allocated as asked; ``cpus_per_task``: 0 when unknown; ``wclass`` indexes
    ``class_names``; ``skipped`` counts records not used, by reason."""

    source: str
    job_id: np.ndarray
    wclass: np.ndarray
    class_names: tuple[str, ...]
    req_cpus: np.ndarray
    cpus_per_task: np.ndarray
    elapsed_s: np.ndarray
    cpu_time_s: np.ndarray
    req_mem_mb: np.ndarray
    used_mem_mb: np.ndarray
    skipped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.job_id)


class _Builder:
    def __init__(self, source: str, min_elapsed_s: float):
        self.source, self.min_elapsed_s = source, min_elapsed_s
        self.cols: dict[str, list] = {k: [] for k in ("job_id", "wclass", "req_cpus", "cpus_per_task", "elapsed_s",
                                                      "cpu_time_s", "req_mem_mb", "used_mem_mb")}
        self.classes: dict[str, int] = {}
        self.skipped: dict[str, int] = {}

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def add(self, job_id: int, wclass: str, req_cpus: float, elapsed_s: float, cpu_time_s: float,
            req_mem_mb: float = np.nan, used_mem_mb: float = np.nan, cpus_per_task: int = 0,
            line: int | None = None) -> None:
        """One finished job (``line``: where it is in the file, for a bound's error)."""
        for what, value, hi in (("NCPUS", req_cpus, MAX_PROCS), ("elapsed time", elapsed_s, MAX_DURATION_S),
                                ("TotalCPU", cpu_time_s, MAX_DURATION_S * MAX_PROCS),
                                ("requested memory (MB)", req_mem_mb, MAX_MEMORY_GB * 1024 * MAX_NODES),
                                ("MaxRSS (MB)", used_mem_mb, MAX_MEMORY_GB * 1024 * MAX_NODES)):
            if not (what.endswith("(MB)") and np.isnan(value)):
                check(float(value), f"{what} of job {job_id}", self.source, line, 0, hi)
        if elapsed_s < self.min_elapsed_s:
            self.skip(f"ran under {self.min_elapsed_s:g} s")
            return
        if not req_cpus > 0:
            self.skip("no CPU count")
            return
        for key, value in (("job_id", job_id), ("wclass", self.classes.setdefault(wclass, len(self.classes))),
                           ("req_cpus", req_cpus), ("cpus_per_task", cpus_per_task), ("elapsed_s", elapsed_s),
                           ("cpu_time_s", cpu_time_s), ("req_mem_mb", req_mem_mb), ("used_mem_mb", used_mem_mb)):
            self.cols[key].append(value)

    def build(self) -> UsageHistory:
        if not self.cols["job_id"]:
            raise WorkloadError(self.source, f"no usable finished jobs (skipped: {self.skipped or 'none'})")
        c = {k: np.asarray(v, dtype=np.int64 if k in ("job_id", "wclass", "cpus_per_task") else np.float64)
             for k, v in self.cols.items()}
        return UsageHistory(self.source, class_names=tuple(self.classes), skipped=self.skipped, **c)


def job_class(comment: str | None, wckey: str | None, account: str | None) -> str:
    """The workload class a finished job ran as (see the module docstring); ``-`` when nothing names one."""
    return comment_tags(comment).get("class") or (wckey or "").removeprefix("class=") or account or "-"


def parse_cpu_time(text: str) -> float:
    """sacct ``TotalCPU``/``Elapsed`` (``[D-][HH:]MM:SS[.mmm]``) in seconds."""
    whole, _, frac = text.strip().partition(".")
    secs = parse_timelimit(whole)
    if secs is None or (frac and not frac.isdigit()):
        raise ValueError(f"not a duration: {text!r}")
    if whole.count(":") == 0:  # parse_timelimit reads a bare number as minutes; sacct means seconds here
        secs = float(whole)
    return secs + (float("0." + frac) if frac else 0.0)


def _rss_mb(text: str) -> float:
    return parse_mem_gb(text, 1, 1) * 1024 if text.strip() else np.nan


def read_usage_sacct_parsable(path: str | Path, min_elapsed_s: float = 60.0) -> UsageHistory:
    """Read ``sacct -P`` output with usage columns (see the module docstring)."""
    path = Path(path)
    header, lines = sacct_header(path)
    need = ["JobID", "TotalCPU", "NCPUS"]
    missing = [k for k in need if k not in header] + ([] if {"Elapsed", "ElapsedRaw"} & set(header) else ["Elapsed"])
    if missing:
        raise WorkloadError(str(path), f"sacct -P header lacks {', '.join(missing)} for right-sizing "
                                       f"(has: {', '.join(header)})", 1)
    jobs: dict[str, dict] = {}
    order: list[str] = []
    for lineno, line in lines:
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != len(header):
            raise WorkloadError(str(path), f"{len(parts)} fields, header has {len(header)}", lineno)
        rec = dict(zip(header, parts))
        main, _, step = rec["JobID"].partition(".")
        try:
            if not step:
                jobs[main] = {"rec": rec, "used": np.nan, "line": lineno}
                order.append(main)
            elif main in jobs and rec.get("MaxRSS", "").strip():
                tasks = int(rec["NTasks"]) if rec.get("NTasks", "").strip().isdigit() else 1
                used = _rss_mb(rec["MaxRSS"]) * max(tasks, 1)
                jobs[main]["used"] = np.nanmax([jobs[main]["used"], used])
        except ValueError as err:
            raise WorkloadError(str(path), f"bad record: {err}", lineno) from None
    out = _Builder(str(path), min_elapsed_s)
    for main in order:
        rec, lineno = jobs[main]["rec"], jobs[main]["line"]
        if rec.get("State", "COMPLETED").split()[0] != "COMPLETED":
            out.skip("not COMPLETED")
            continue
        try:
            cpus, nodes = int(rec["NCPUS"]), int(rec.get("NNodes") or 1)
            elapsed = float(rec["ElapsedRaw"]) if rec.get("ElapsedRaw") else parse_cpu_time(rec["Elapsed"])
            req_mem = parse_mem_gb(rec["ReqMem"], cpus, nodes) * 1024 * nodes if rec.get("ReqMem") else np.nan
            out.add(int(main.split("_")[0].split("+")[0]), job_class(rec.get("Comment"), rec.get("WCKey"),
                                                                      rec.get("Account")),
                    cpus, elapsed, parse_cpu_time(rec["TotalCPU"]), req_mem or np.nan, jobs[main]["used"],
                    line=lineno)
        except WorkloadError:
            raise
        except (ValueError, TypeError, OverflowError) as err:
            raise WorkloadError(str(path), f"bad record: {err}", lineno) from None
    return out.build()


def _text(v) -> str:
    """A sacct --json string field: plain (<= 22.05) or an object such as ``{"job": ...}``/``{"wckey": ...}``."""
    if isinstance(v, dict):
        return str(next((x for x in v.values() if isinstance(x, str) and x), ""))
    return "" if v is None else str(v)


def _seconds(v) -> float:
    if isinstance(v, dict) and "seconds" in v:
        return float(v["seconds"]) + float(v.get("microseconds", 0)) / 1e6
    return float(_number(v) or 0.0)


def read_usage_sacct_json(path: str | Path, min_elapsed_s: float = 60.0) -> UsageHistory:
    """Read ``sacct --json`` output (see the module docstring)."""
    path = Path(path)
    out = _Builder(str(path), min_elapsed_s)
    for i, job in enumerate(sacct_jobs(path)):
        try:
            state = job.get("state", {})
            current = state.get("current") if isinstance(state, dict) else state
            current = current[0] if isinstance(current, list) else current
            if str(current) != "COMPLETED":
                out.skip("not COMPLETED")
                continue
            t = job["time"]
            cpus = float(_number(job.get("required", {}).get("CPUs")) or 0)
            nodes = float(str(job.get("allocation_nodes", 1)).split()[0]) \
                if str(job.get("allocation_nodes", "1")).isdigit() else 1.0
            mem = job.get("required", {}).get("memory_per_node", job.get("required", {}).get("memory"))
            req_mem = (_number(mem) or np.nan) * nodes if mem is not None else np.nan
            used = np.nan
            for step in job.get("steps", []):
                for tres in step.get("tres", {}).get("requested", {}).get("max", []):
                    if tres.get("type") == "mem":
                        used = np.nanmax([used, float(tres["count"]) / 2**20])
            out.add(int(job["job_id"]), job_class(_text(job.get("comment")), _text(job.get("wckey")),
                                                  _text(job.get("account"))),
                    cpus, _seconds(t.get("elapsed")), _seconds(t.get("total")), req_mem, used)
        except WorkloadError:
            raise
        except (KeyError, ValueError, TypeError, IndexError, OverflowError) as err:
            raise WorkloadError(str(path), f"job #{i} ({job.get('job_id', '?')}): bad or missing field {err}") \
                from None
    return out.build()


def read_usage_swf(path: str | Path, min_elapsed_s: float = 60.0) -> UsageHistory:
    """Read an SWF trace's usage fields; records with unknown CPU time are skipped and counted."""
    path = Path(path)
    if not path.is_file():
        raise WorkloadError(str(path), "no such file")
    queues = {}
    for _, line in text_lines(path):
        if not line.startswith(";"):
            break
        m = re.match(r";\s*Queue:\s*(-?\d+)\s+(\S+)", line)
        if m:
            queues[int(m[1])] = m[2]
    out = _Builder(str(path), min_elapsed_s)
    for row in _parse(path):
        job, run, alloc, avg_cpu, used_kb, req_procs, req_kb, status, queue = row[[0, 3, 4, 5, 6, 7, 9, 10, 14]]
        if status != 1:
            out.skip("not completed (status != 1)")
            continue
        if avg_cpu < 0 or alloc <= 0 or run < 0:
            out.skip("unknown CPU time or size")
            continue
        procs = req_procs if req_procs > 0 else alloc
        name = queues.get(int(queue), f"queue{int(queue)}") if queue >= 0 else "-"
        out.add(int(job), name, procs, run, avg_cpu * alloc, req_kb * procs / 1024 if req_kb > 0 else np.nan,
                used_kb * alloc / 1024 if used_kb >= 0 else np.nan)
    return out.build()


def load_usage(path: str | Path, min_elapsed_s: float = 60.0) -> UsageHistory:
    """By file name: ``.swf[.gz]`` SWF, ``.json`` sacct --json, anything else sacct -P."""
    name = Path(path).name.lower()
    if name.endswith((".swf", ".swf.gz")):
        return read_usage_swf(path, min_elapsed_s)
    if name.endswith(".json"):
        return read_usage_sacct_json(path, min_elapsed_s)
    return read_usage_sacct_parsable(path, min_elapsed_s)
