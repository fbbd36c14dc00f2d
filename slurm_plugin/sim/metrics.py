"""Metrics of a finished run, in the keys of the results format (issue 4)."""

from __future__ import annotations

import numpy as np

from ..workload.jobs import JobTable
from .engine import Outcome
from .machine import Machine

BSLD_THRESHOLD_S = 10.0


def bounded_slowdown(wait: np.ndarray, run: np.ndarray, threshold: float = BSLD_THRESHOLD_S) -> np.ndarray:
    """max(1, (wait + run) / max(run, threshold)) per job."""
    return np.maximum(1.0, (wait + run) / np.maximum(run, threshold))


def compute_metrics(jobs: JobTable, out: Outcome, machine: Machine) -> dict:
    started = ~np.isnan(out.begin)
    wait = (out.begin - jobs.submit)[started]
    run = np.minimum(jobs.run, jobs.limit)[started]
    if not started.any():
        return {"avg_wait_s": None, "p95_wait_s": None, "avg_bsld": None, "utilization": 0.0,
                "energy_kwh": out.energy_j / 3.6e6, "cost": out.cost, "makespan_s": 0.0, "max_wait_s": None,
                "utilization_by_group": {}}
    t0 = float(jobs.submit.min())
    makespan = float(np.nanmax(out.end)) - t0
    cores = np.array([g.count * g.cores for g in machine.groups], dtype=float)
    span = max(makespan, 1e-9)
    return {
        "avg_wait_s": float(wait.mean()),
        "p95_wait_s": float(np.percentile(wait, 95)),
        "avg_bsld": float(bounded_slowdown(wait, run).mean()),
        "utilization": float(out.group_core_s.sum() / (cores.sum() * span)),
        "utilization_by_group": {g.name: float(out.group_core_s[i] / (cores[i] * span))
                                 for i, g in enumerate(machine.groups)},
        "energy_kwh": out.energy_j / 3.6e6,
        "cost": out.cost,
        "makespan_s": makespan,
        "max_wait_s": float(wait.max()),
    }
