"""The raised-load replay of the selection's tie-break (:mod:`.select`, rule 4a): how loaded a stretch of the
history is, and the tuning part with its arrivals compressed to a stated load.

Offered load of a set of jobs = the largest over the machine's resources (cores, and each GRES name) of the
resource-seconds the jobs ask (per node x nodes x run time, the run cut at the time limit) over what the
machine has in the span from the first to the last submit: the bottleneck's. Compressing divides the time since
the first submit by the factor (run times unchanged), so the offered load grows by that factor.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..sim.machine import Machine
from ..sim.run import Prepared
from ..workload.jobs import JobTable


def offered_load(jobs: JobTable, machine: Machine, start: int = 0) -> float | None:
    """The offered load of ``jobs[start:]`` on ``machine`` (None when they span no time: all submitted at once)."""
    sub = jobs.submit[start:]
    if len(sub) < 2 or sub[-1] <= sub[0]:
        return None
    span = float(sub[-1] - sub[0])
    run = np.minimum(jobs.run, jobs.limit)[start:]
    nodes = jobs.nodes[start:]
    loads = [float((nodes * jobs.cores[start:] * run).sum()) / (machine.cores * span)] if machine.cores else []
    names = jobs.gres_name[start:]
    for i, name in enumerate(jobs.gres_names):
        have = sum(g.count * c for g in machine.groups for (n, _), c in g.gres.items() if n == name)
        on = names == i
        if have and on.any():
            loads.append(float((nodes[on] * jobs.gres_count[start:][on] * run[on]).sum()) / (have * span))
    return max(loads) if loads else None


def stress_factor(jobs: JobTable, machine: Machine, start: int, target: float) -> float | None:
    """How many times the arrivals must be compressed for ``jobs[start:]`` (the validation part) to reach
    ``target`` offered load; None when they are at it already (or span no time): no raised-load replay."""
    load = offered_load(jobs, machine, start)
    if load is None or load <= 0 or load >= target:
        return None
    return target / load


def compressed(p: Prepared, factor: float) -> Prepared:
    """``p`` with every submit time moved ``factor`` times closer to the first (order and run times kept)."""
    if factor <= 0:
        raise ValueError(f"compression factor must be > 0 (got {factor:g})")
    j = p.workload.jobs
    t0 = float(j.submit[0]) if len(j) else 0.0
    jobs = replace(j, submit=t0 + (j.submit - t0) / factor)
    return replace(p, workload=replace(p.workload, jobs=jobs, compress=p.workload.compress * factor))
