"""Cut a job history by submit time into a tuning part and a held-back test part.

The protocol (issue 13): tune on the first ``tune_fraction`` of the jobs by submit time, report on the rest.
The held-back jobs are simulated *after* the tuning jobs, in the same run (the machine is not empty when the
test period begins), and only their own waits and slowdowns are scored: :func:`held_back_mask` marks them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..workload.jobs import JobTable


@dataclass(frozen=True)
class Split:
    """``tune`` = jobs ``[0, boundary)`` in submit order, ``test`` = ``[boundary, n)``; ``cut_time`` is the first
    held-back job's submit time (jobs submitted at the same second are never split apart)."""

    boundary: int
    jobs: int
    cut_time: float

    @property
    def tune_jobs(self) -> int:
        return self.boundary

    @property
    def test_jobs(self) -> int:
        return self.jobs - self.boundary

    def as_dict(self) -> dict:
        return {"tune_jobs": self.tune_jobs, "test_jobs": self.test_jobs, "cut_time": self.cut_time}


def split_history(jobs: JobTable, tune_fraction: float = 0.7) -> Split:
    """Split the (submit-sorted) ``jobs`` after the first ``tune_fraction`` of them. Raises ValueError when
    the fraction is outside (0, 1) or either part would be empty."""
    if not 0.0 < tune_fraction < 1.0:
        raise ValueError(f"tune fraction must be in (0, 1) (got {tune_fraction:g})")
    n = len(jobs)
    if n < 2:
        raise ValueError(f"a history of {n} job(s) cannot be split into a tuning and a test part")
    if np.any(np.diff(jobs.submit) < 0):
        raise ValueError("jobs are not sorted by submit time")
    b = int(round(n * tune_fraction))
    b = min(max(b, 1), n - 1)
    # keep jobs submitted in the same second together: move the cut to the first job with a later submit time
    b = int(np.searchsorted(jobs.submit, jobs.submit[b - 1], side="right"))
    if b >= n:
        raise ValueError("every job after the cut was submitted at the same time as the last tuning job")
    return Split(boundary=b, jobs=n, cut_time=float(jobs.submit[b]))


def tune_part(jobs: JobTable, split: Split) -> JobTable:
    """The jobs the tuner may look at (the first part only)."""
    return jobs.take(np.arange(split.boundary))


def held_back_mask(split: Split) -> np.ndarray:
    """Boolean mask over all jobs: True for the held-back (scored) jobs."""
    m = np.zeros(split.jobs, dtype=bool)
    m[split.boundary:] = True
    return m


FIRST_ORIGIN = 0.4  # the first rolling origin, as a share of the tuning part (the weighted fit needs a history)
FOLDS = 4  # validation blocks after it, of equal job counts


def rolling_origins(jobs: JobTable, first: float = FIRST_ORIGIN, folds: int = FOLDS) -> list[int]:
    """The rolling-origin validation cut points of the (submit-sorted) tuning part: ``folds + 1`` job indices
    ``o_0 < o_1 < ... < o_folds = n``; block k is jobs ``[o_k, o_{k+1})``, fitted on ``[0, o_k)``. Each cut is
    moved, like :func:`split_history`'s, past jobs submitted in the same second; cuts that collide are merged,
    so fewer blocks come back when the history is tiny (ValueError when not even one is left)."""
    n = len(jobs)
    if not 0.0 < first < 1.0 or folds < 1:
        raise ValueError(f"rolling origins need 0 < first < 1 and folds >= 1 (got {first:g}, {folds})")
    cuts = []
    for k in range(folds):
        b = min(max(int(round(n * (first + (1 - first) * k / folds))), 1), n - 1)
        b = int(np.searchsorted(jobs.submit, jobs.submit[b - 1], side="right"))
        if b < n and (not cuts or b > cuts[-1]):
            cuts.append(b)
    if not cuts:
        raise ValueError(f"a tuning part of {n} job(s) has no validation block")
    return cuts + [n]


def fold_masks(n: int, origins: list[int]) -> dict[str, np.ndarray]:
    """Boolean masks over the tuning part: ``fit{k}`` (before origin k), ``val{k}`` (block k), ``train`` (=
    ``fit0``), ``val`` (every block) and ``all`` (the whole tuning part: what the deployed fit uses)."""
    idx = np.arange(n)
    out = {}
    for k in range(len(origins) - 1):
        out[f"fit{k}"] = idx < origins[k]
        out[f"val{k}"] = (idx >= origins[k]) & (idx < origins[k + 1])
    out["train"], out["val"], out["all"] = idx < origins[0], idx >= origins[0], np.ones(n, dtype=bool)
    return out


def before_first_origin(jobs: JobTable, tune_fraction: float = 0.7) -> JobTable:
    """The jobs of the history ``jobs`` before the first rolling origin of its tuning part: what a candidate
    that learns from the history (the fine-tuned DQN) may see, so it has seen no validation job."""
    tj = tune_part(jobs, split_history(jobs, tune_fraction))
    return tj.take(np.arange(rolling_origins(tj)[0]))
