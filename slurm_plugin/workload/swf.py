"""Reader of the Standard Workload Format (Parallel Workloads Archive).

Conventions (cleaned traces): ``;`` header lines, ``MaxNodes``/``MaxProcs`` give the machine
(``MaxProcs / MaxNodes`` cores per node; one missing = the other, so 1 core per node); 18 fields, -1 = unknown.
A job's size is max(allocated, requested) processors (what ran); it gets ceil(procs / cores per node) whole
nodes. Requested time -1 -> the run time (a perfect estimate, as RLScheduler does). Records with unknown run
time or size are skipped and counted in ``Workload.skipped``.
"""

from __future__ import annotations

import gzip
import logging
from pathlib import Path

import numpy as np

from .errors import WorkloadError
from .jobs import JobTable, Workload

log = logging.getLogger(__name__)
FIELDS = 18


def _open(path: Path):
    return gzip.open(path, "rt") if path.suffix == ".gz" else open(path)


def read_header(path: Path) -> dict[str, str]:
    """The ``; Key: value`` header lines of an SWF file."""
    header: dict[str, str] = {}
    with _open(path) as fh:
        for line in fh:
            if not line.startswith(";"):
                break
            key, sep, value = line[1:].partition(":")
            if sep and key.strip() and key.strip() not in header:
                header[key.strip()] = value.strip()
    return header


def machine_of(header: dict[str, str], source: str) -> tuple[int, int] | None:
    """(nodes, cores per node) from MaxNodes/MaxProcs, or None when the header names neither."""
    def num(key: str) -> int | None:
        if key not in header:
            return None
        try:
            return int(header[key].split()[0])
        except (ValueError, IndexError):
            raise WorkloadError(source, f"header {key} is not a number: {header[key]!r}") from None
    nodes, procs = num("MaxNodes"), num("MaxProcs")
    if nodes is None and procs is None:
        return None
    nodes = nodes or procs
    procs = procs or nodes
    return nodes, max(1, procs // nodes)


def _parse(path: Path) -> np.ndarray:
    rows = []
    with _open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            s = line.strip()
            if not s or s.startswith(";"):
                continue
            parts = s.split()
            if len(parts) < FIELDS:
                raise WorkloadError(str(path), f"{len(parts)} fields, SWF needs {FIELDS}", lineno)
            try:
                rows.append([float(p) for p in parts[:FIELDS]])
            except ValueError as err:
                raise WorkloadError(str(path), f"not a number: {err}", lineno) from None
    if not rows:
        raise WorkloadError(str(path), "no job records")
    return np.asarray(rows)


def read_swf(path: str | Path, cores_per_node: int | None = None) -> Workload:
    """Read an SWF file (plain or .gz). ``cores_per_node`` overrides the header's (e.g. for a site)."""
    path = Path(path)
    if not path.is_file():
        raise WorkloadError(str(path), "no such file")
    machine = machine_of(read_header(path), str(path))
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
    jobs = JobTable.build(dict(id=a[:, 0], submit=a[:, 1], run=run, limit=limit, nodes=nodes,
                               cores=np.full(len(a), ppn), user=a[:, 11]))
    return Workload(name=path.name, jobs=jobs, machine=machine, skipped=skipped)

