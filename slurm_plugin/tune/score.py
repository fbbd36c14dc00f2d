"""Score a finished run on a subset of its jobs (the held-back or validation part): the site's objective, the
waits, and the objective per block of consecutive jobs (what the selection's noise estimate uses).

Objectives: ``avg_bsld`` (average bounded slowdown, the default) or ``tier_wait`` (sites with QoS tiers: the
average wait of each tier, weighted by the tier's rank: 1 for the lowest priority, 2 for the next, ...). A job the run never started counts as waiting
until the run's last event.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..sim.metrics import bounded_slowdown
from ..workload.jobs import JobTable

OBJECTIVES = ("avg_bsld", "tier_wait")
BLOCKS = 10  # blocks of consecutive scored jobs for the noise estimate


@dataclass(frozen=True)
class Score:
    """Metrics of the scored jobs; ``objective`` is the value of the chosen objective (lower is better) and
    ``blocks`` its value on each of up to :data:`BLOCKS` runs of consecutive scored jobs."""

    objective: float
    avg_bsld: float
    avg_wait_s: float
    max_wait_s: float
    p95_wait_s: float
    jobs: int
    unstarted: int
    blocks: tuple[float, ...]

    def as_dict(self) -> dict:
        d = asdict(self)
        d["blocks"] = list(self.blocks)
        return d


def objective_for(jobs: JobTable, site=None) -> str:
    """``tier_wait`` when the site has QoS tiers and the jobs carry more than one QoS priority, else ``avg_bsld``."""
    tiers = len(site.policy.qos_tiers) if site is not None else 0
    return "tier_wait" if tiers >= 2 and len(np.unique(jobs.qos_priority)) >= 2 else "avg_bsld"


def per_job(objective: str, wait: np.ndarray, run: np.ndarray, qos: np.ndarray) -> np.ndarray:
    """Per-job contributions whose mean is the objective."""
    if objective == "avg_bsld":
        return bounded_slowdown(wait, run)
    if objective != "tier_wait":
        raise ValueError(f"unknown objective {objective!r} (valid: {', '.join(OBJECTIVES)})")
    levels, idx = np.unique(qos, return_inverse=True)
    weight = np.arange(1.0, len(levels) + 1.0)  # levels are sorted: the lowest priority weighs 1
    count = np.bincount(idx, minlength=len(levels)).astype(float)
    # mean(contrib) = sum_t weight_t * mean_wait_t / sum_t weight_t
    return wait * (weight[idx] / weight.sum()) * len(wait) / count[idx]


def score(jobs: JobTable, begin: np.ndarray, end: np.ndarray, mask: np.ndarray, objective: str = "avg_bsld",
          blocks: int = BLOCKS) -> Score:
    """The metrics of the jobs where ``mask`` is True, from the run's per-job ``begin``/``end`` (NaN: never
    started)."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        raise ValueError("no job to score")
    horizon = float(np.nanmax(end)) if np.isfinite(end).any() else float(jobs.submit.max())
    b = begin[idx]
    unstarted = np.isnan(b)
    wait = np.where(unstarted, horizon, b) - jobs.submit[idx]
    wait = np.maximum(wait, 0.0)
    run = np.minimum(jobs.run, jobs.limit)[idx]
    contrib = per_job(objective, wait, run, jobs.qos_priority[idx])
    parts = np.array_split(contrib, min(blocks, len(contrib)))
    return Score(objective=float(contrib.mean()), avg_bsld=float(bounded_slowdown(wait, run).mean()),
                 avg_wait_s=float(wait.mean()), max_wait_s=float(wait.max()),
                 p95_wait_s=float(np.percentile(wait, 95)), jobs=len(idx), unstarted=int(unstarted.sum()),
                 blocks=tuple(float(p.mean()) for p in parts))
