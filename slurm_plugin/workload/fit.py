"""Which jobs can never run on a machine (more nodes, cores, memory or GRES than any eligible group has)."""

from __future__ import annotations

import numpy as np

from ..site import ARCHES
from .jobs import ARCH_BIT, JobTable


def eligible_groups(jobs: JobTable, i: int, machine) -> list[int]:
    """Indices of the machine's groups whose arch and GRES kinds suit job ``i`` (capacity not checked)."""
    out = []
    mask = int(jobs.arch_mask[i])
    for gi, g in enumerate(machine.groups):
        if mask and not mask & ARCH_BIT[g.arch]:
            continue
        if jobs.gres_name[i] >= 0 and gres_capacity(jobs, i, g) == 0:
            continue
        out.append(gi)
    return out


def fitting_groups(jobs: JobTable, i: int, machine, groups: list[int] | None = None) -> list[int]:
    """The eligible groups (or ``groups``) whose one node holds one share of job ``i``: cores, memory, GRES."""
    out = []
    for gi in eligible_groups(jobs, i, machine) if groups is None else groups:
        g = machine.groups[gi]
        if (g.cores >= jobs.cores[i] and (g.memory_gb == 0 or jobs.mem_gb[i] <= g.memory_gb)
                and (jobs.gres_name[i] < 0 or gres_capacity(jobs, i, g) >= jobs.gres_count[i])):
            out.append(gi)
    return out


def able_cores(jobs: JobTable, machine) -> np.ndarray:
    """Per job, the cores of the machine's groups whose arch and GRES kinds suit it (computed once per shape)."""
    if not len(jobs):
        return np.empty(0)
    if not np.any(jobs.arch_mask) and not np.any(np.asarray(jobs.gres_name) >= 0):  # one shape: every group suits
        return np.full(len(jobs), float(sum(machine.groups[g].count * machine.groups[g].cores
                                            for g in eligible_groups(jobs, 0, machine))))
    keys = np.column_stack([np.asarray(jobs.arch_mask, dtype=np.int64), np.asarray(jobs.gres_name, dtype=np.int64),
                            np.asarray(jobs.gres_type, dtype=np.int64)])
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    per_key = np.array([float(sum(machine.groups[g].count * machine.groups[g].cores
                                  for g in eligible_groups(jobs, int(i), machine))) for i in first])
    return per_key[inverse.reshape(-1)]


def gres_capacity(jobs: JobTable, i: int, group) -> int:
    """Per-node count of the GRES job ``i`` asks for on ``group`` (0 if it has none of that name/type)."""
    name = jobs.gres_names[jobs.gres_name[i]]
    types = jobs.gres_type_options(i)
    return sum(c for (n, t), c in group.gres.items() if n == name and (types is None or t in types))


def unfit_jobs(jobs: JobTable, machine) -> list[tuple[int, str]]:
    """(row index, reason) of every job no set of eligible nodes can ever hold."""
    out: list[tuple[int, str]] = []
    cache: dict[tuple, str | None] = {}
    for i in range(len(jobs)):
        key = (int(jobs.arch_mask[i]), int(jobs.gres_name[i]), int(jobs.gres_type[i]), int(jobs.gres_count[i]),
               int(jobs.nodes[i]), int(jobs.cores[i]), float(jobs.mem_gb[i]))
        if key not in cache:
            cache[key] = _why_unfit(jobs, i, machine)
        if cache[key]:
            out.append((i, cache[key]))
    return out


def _why_unfit(jobs: JobTable, i: int, machine) -> str | None:
    groups = eligible_groups(jobs, i, machine)
    if not groups:
        archs = [a for a in ARCHES if int(jobs.arch_mask[i]) & ARCH_BIT[a]] or ["any"]
        return f"no node group with arch {'|'.join(archs)} and GRES '{jobs.gres_label(i) or '-'}'"
    ok = fitting_groups(jobs, i, machine, groups)
    if not ok:
        g = machine.groups[groups[0]]
        return (f"per node {jobs.cores[i]} cores, {jobs.mem_gb[i]:g} GB, GRES '{jobs.gres_label(i) or '-'}'; "
                f"largest eligible node ({g.name}) has {g.cores} cores, {g.memory_gb:g} GB")
    have = int(np.sum([machine.groups[gi].count for gi in ok]))
    if jobs.nodes[i] > have:
        return f"{jobs.nodes[i]} nodes, only {have} eligible nodes"
    return None
