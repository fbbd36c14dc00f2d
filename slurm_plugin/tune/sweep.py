"""Replay candidates in the simulator, in parallel (:func:`slurm_plugin.sim.parallel.run_all`, one progress
bar over all runs), and score each run on the parts of its jobs it is judged on.

A run is (candidate, backfill, scope): scope ``tune`` simulates only the tuning part (scored on the inner
training jobs and on the inner validation jobs); ``whole`` simulates the whole history (scored on the held-back
jobs only, so the machine is not empty when the test period begins).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..sim.policy import sim_ranking
from ..sim.run import Prepared, simulate
from .candidates import Candidate
from .score import Score, score
from .split import Split, fold_masks, held_back_mask, rolling_origins, split_history, tune_part


@dataclass
class Twin:
    """The history cut for tuning: the whole trace, its tuning part, and the masks each scope is scored on."""

    whole: Prepared
    tune: Prepared
    split: Split  # whole -> tuning part / held-back part
    inner: Split  # tuning part -> before the first rolling origin / the validation blocks
    objective: str
    masks: dict[str, dict[str, np.ndarray]]
    origins: list[int]  # rolling-origin cut points of the tuning part (:func:`.split.rolling_origins`)

    @property
    def folds(self) -> int:
        return len(self.origins) - 1

    @classmethod
    def of(cls, p: Prepared, objective: str, tune_fraction: float = 0.7) -> Twin:
        split = split_history(p.workload.jobs, tune_fraction)
        tune_jobs = tune_part(p.workload.jobs, split)
        origins = rolling_origins(tune_jobs)
        inner = Split(boundary=origins[0], jobs=len(tune_jobs), cut_time=float(tune_jobs.submit[origins[0]]))
        tune = replace(p, workload=replace(p.workload, jobs=tune_jobs))
        return cls(p, tune, split, inner, objective,
                   {"tune": fold_masks(len(tune_jobs), origins), "whole": {"test": held_back_mask(split)}}, origins)


def run_one(twin: Twin, task: tuple[Candidate, bool, str]) -> dict[str, Score]:
    """One replay (module-level for the worker processes): part name -> score."""
    cand, backfill, scope = task
    p = twin.tune if scope == "tune" else twin.whole
    rank = sim_ranking(cand.spec, p.site, float(p.machine.cores))
    _, out = simulate(p, rank, backfill=backfill)
    return {part: score(p.workload.jobs, out.begin, out.end, mask, twin.objective)
            for part, mask in twin.masks[scope].items()}


def replay(twin: Twin, tasks: list[tuple[Candidate, bool, str]], jobs: int | None = None,
           desc: str = "tune") -> list[dict[str, Score]]:
    """:func:`run_one` over ``tasks`` on ``jobs`` processes (None: every core), results in task order."""
    from ..sim.parallel import run_all

    return run_all(run_one, twin, tasks, jobs, desc=desc)
