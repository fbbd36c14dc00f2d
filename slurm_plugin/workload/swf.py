"""Reader of the Standard Workload Format (Parallel Workloads Archive).

Conventions (cleaned traces): ``;`` header lines, ``MaxNodes``/``MaxProcs`` give the machine
(``MaxProcs / MaxNodes`` cores per node; one missing = the other, so 1 core per node); 18 fields, -1 = unknown.
A job's size is max(allocated, requested) processors (what ran); it gets ceil(procs / cores per node) whole
nodes. Requested time -1 -> the run time (a perfect estimate, as RLScheduler does). Records with unknown run
time or size are skipped and counted in ``Workload.skipped``. The wait field (3), where known, becomes
``Workload.recorded_wait``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from .errors import WorkloadError
from .jobs import JobTable, Workload
from .limits import MAX_CPUS_PER_NODE, MAX_DURATION_S, MAX_NODES, MAX_PROCS, MAX_TIME_S, number, text_lines

log = logging.getLogger(__name__)
FIELDS = 18


# Every field: (what it is, lowest, highest); -1 = unknown. The fields this reader uses have real bounds.
_FIELD_BOUNDS = [(f"field {i + 1}", -1, 1e15) for i in range(FIELDS)]
for _i, (_what, _lo, _hi) in {0: ("job number", 0, 1e15), 1: ("submit time", 0, MAX_TIME_S),
                             3: ("run time", -1, MAX_DURATION_S), 4: ("allocated processors", -1, MAX_PROCS),
                             7: ("requested processors", -1, MAX_PROCS), 8: ("requested time", -1, MAX_DURATION_S),
                             11: ("user id", -1, 1e12)}.items():
    _FIELD_BOUNDS[_i] = (f"{_what} (field {_i + 1})", _lo, _hi)


def read_header(path: Path, lines: dict[str, int] | None = None) -> dict[str, str]:
    """The ``; Key: value`` header lines of an SWF file; ``lines`` (if given) gets each key's line number."""
    header: dict[str, str] = {}
    for lineno, line in text_lines(path):
        if not line.startswith(";"):
            break
        key, sep, value = line[1:].partition(":")
        if sep and key.strip() and key.strip() not in header:
            header[key.strip()] = value.strip()
            if lines is not None:
                lines[key.strip()] = lineno
    return header


def machine_of(header: dict[str, str], source: str, lines: dict[str, int] | None = None) -> tuple[int, int] | None:
    """(nodes, cores per node) from MaxNodes/MaxProcs, or None when the header names neither; each within a
    site's bounds (``lines``: header line numbers for the error)."""
    lines = lines or {}

    def num(key: str, hi: float) -> int | None:
        if key not in header:
            return None
        value = (header[key].split() or [""])[0]
        return int(number(value, f"header {key}", source, lines.get(key), 1, hi, integer=True))
    nodes, procs = num("MaxNodes", MAX_NODES), num("MaxProcs", MAX_PROCS)
    if nodes is None and procs is None:
        return None
    nodes = nodes or procs
    procs = procs or nodes
    if nodes > MAX_NODES:
        raise WorkloadError(source, f"MaxProcs {procs} without MaxNodes: {nodes} nodes, at most {MAX_NODES}",
                            lines.get("MaxProcs"))
    if procs // nodes > MAX_CPUS_PER_NODE:
        raise WorkloadError(source, f"MaxProcs / MaxNodes = {procs // nodes} cores per node, at most "
                                    f"{MAX_CPUS_PER_NODE}", lines.get("MaxProcs"))
    return nodes, max(1, procs // nodes)


def _parse(path: Path) -> np.ndarray:
    rows = []
    source = str(path)
    for lineno, line in text_lines(path):
        s = line.strip()
        if not s or s.startswith(";"):
            continue
        parts = s.split()
        if len(parts) < FIELDS:
            raise WorkloadError(source, f"{len(parts)} fields, SWF needs {FIELDS}", lineno)
        rows.append([number(p, what, source, lineno, lo, hi) for p, (what, lo, hi) in zip(parts, _FIELD_BOUNDS)])
    if not rows:
        raise WorkloadError(source, "no job records")
    return np.asarray(rows)


def read_swf(path: str | Path, cores_per_node: int | None = None) -> Workload:
    """Read an SWF file (plain or .gz). ``cores_per_node`` overrides the header's (e.g. for a site)."""
    path = Path(path)
    lines: dict[str, int] = {}
    machine = machine_of(read_header(path, lines), str(path), lines)
    a = _parse(path)
    ppn = cores_per_node or (machine[1] if machine else 1)
    procs = np.maximum(a[:, 4], a[:, 7])
    run = a[:, 3]
    skipped = {"unknown run time (-1)": int((run < 0).sum()),
               "unknown size (procs <= 0)": int(((procs <= 0) & (run >= 0)).sum())}
    keep = (run >= 0) & (procs > 0)
    a, procs, run = a[keep], procs[keep], run[keep]
    limit = np.where(a[:, 8] > 0, a[:, 8], run)
    nodes = np.ceil(procs / ppn).astype(np.int64)
    skipped = {k: v for k, v in skipped.items() if v}
    for reason, n in skipped.items():
        log.warning("%s: skipped %d record(s): %s", path, n, reason)
    if not len(a):
        raise WorkloadError(str(path), "no usable job records: all skipped ("
                            + "; ".join(f"{n} {reason}" for reason, n in skipped.items()) + ")")
    jobs = JobTable.build(dict(id=a[:, 0], submit=a[:, 1], run=run, limit=limit, nodes=nodes,
                               cores=np.full(len(a), ppn), user=a[:, 11]))
    known = a[:, 2] >= 0
    recorded = dict(zip(a[known, 0].astype(np.int64).tolist(), a[known, 2].tolist()))
    return Workload(name=path.name, jobs=jobs, machine=machine, skipped=skipped, recorded_wait=recorded)

