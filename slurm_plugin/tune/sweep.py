"""Replay candidates in the simulator, in parallel (:func:`slurm_plugin.sim.parallel.run_all`, one progress
bar over all runs), and score each run on the parts of its jobs it is judged on.

A run is (candidate, backfill, scope): scope ``tune`` simulates only the tuning part (scored on the inner
training jobs and on the inner validation jobs); ``stress`` the same at raised load (``Twin.stress``);
``whole`` simulates the whole history (scored on the held-back
jobs only, so the machine is not empty when the test period begins).

Racing (:func:`race`, for long histories): a first round replays every candidate on a prefix of the tuning part
only (its first ``SCREEN_FRACTION`` of jobs, cut and scored as the tuning part is: inner training / validation);
only the leaders of each family go on to the full tuning part (successive halving with one screening round). A
replay costs more than linearly in jobs (longer queues), so the screen is cheap; what it can lose is a
candidate that trails on the prefix and would lead on the whole part, which the margin guards against.
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
    stress: Prepared | None = None  # the tuning part at raised load (scope ``stress``: .select rule 4a)

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
    p = {"tune": twin.tune, "stress": twin.stress, "whole": twin.whole}[scope]
    rank = sim_ranking(cand.spec, p.site, float(p.machine.cores))
    _, out = simulate(p, rank, backfill=backfill)
    return {part: score(p.workload.jobs, out.begin, out.end, mask, twin.objective)
            for part, mask in twin.masks["tune" if scope == "stress" else scope].items()}


SCREEN_FRACTION = 0.2  # of the tuning part's jobs, by submit time
RACE_MIN_JOBS = 40_000  # race when the tuning part has at least this many jobs (smaller: every candidate in full)
KEEP = 3  # leaders kept per family (fixed rankings / the weighted grid) and backfill mode ...
MARGIN = 0.10  # ... plus every candidate within this fraction of its family's best screening objective


def screen_twin(twin: Twin, fraction: float = SCREEN_FRACTION) -> Twin:
    """The twin of the tuning part's first ``fraction`` of jobs: its ``tune`` scope is that prefix, cut into
    rolling-origin blocks as the tuning part is (no ``whole`` scope)."""
    jobs = twin.tune.workload.jobs
    cut = split_history(jobs, fraction)
    pre = tune_part(jobs, cut)
    origins = rolling_origins(pre)
    inner = Split(boundary=origins[0], jobs=len(pre), cut_time=float(pre.submit[origins[0]]))
    prefix = replace(twin.tune, workload=replace(twin.tune.workload, jobs=pre))
    return Twin(prefix, prefix, cut, inner, twin.objective, {"tune": fold_masks(len(pre), origins)}, origins)


def leaders(scores: dict[str, Score], bound_s: float | None, keep: int | None = None,
            margin: float | None = None) -> list[str]:
    """Labels (in ``scores``' order) that go on from a screen: the ``keep`` (default :data:`KEEP`) best objectives
    among those within ``bound_s`` by max wait (all, when none is), and every such candidate within ``margin``
    (default :data:`MARGIN`) of the best."""
    keep = KEEP if keep is None else keep
    margin = MARGIN if margin is None else margin
    ok = [lab for lab, sc in scores.items() if bound_s is None or sc.max_wait_s <= bound_s] or list(scores)
    ranked = sorted(ok, key=lambda lab: scores[lab].objective)
    best = scores[ranked[0]].objective
    kept = set(ranked[:keep]) | {lab for lab in ranked if scores[lab].objective <= best * (1 + margin) + 1e-12}
    return [lab for lab in scores if lab in kept]


def race(twin: Twin, families: dict[str, tuple[list[Candidate], str]], backfills: tuple[bool, ...],
         bound_s: float | None, jobs: int | None = None, fraction: float = SCREEN_FRACTION,
         desc: str = "tune") -> dict[bool, list[Candidate]]:
    """Screen every candidate of every family on a prefix of the tuning part (one parallel round); per backfill
    mode, the candidates that go on to the full tuning part. ``families``: name -> (candidates, the part whose
    objective ranks them: ``val`` for candidates compared as they are, ``train`` for a family fitted on it)."""
    pre = screen_twin(twin, fraction)
    tasks = [(c, bf, "tune") for bf in backfills for cands, _ in families.values() for c in cands]
    got = {(c.label, bf): r for (c, bf, _), r in zip(tasks, replay(pre, tasks, jobs, desc=f"{desc} (screen)"))}
    out: dict[bool, list[Candidate]] = {}
    for bf in backfills:
        out[bf] = []
        for cands, part in families.values():
            kept = set(leaders({c.label: got[(c.label, bf)][part] for c in cands}, bound_s))
            out[bf] += [c for c in cands if c.label in kept]
    return out


def replay(twin: Twin, tasks: list[tuple[Candidate, bool, str]], jobs: int | None = None,
           desc: str = "tune") -> list[dict[str, Score]]:
    """:func:`run_one` over ``tasks`` on ``jobs`` processes (None: every core), results in task order. The
    longest replays are handed out first (whole history before the tuning part, the DQN, then the rankings
    re-scored at every pass, then the static ones), so no core idles at the end behind one long run."""
    from ..sim.parallel import run_all

    order = sorted(range(len(tasks)), key=lambda i: -_cost(tasks[i]))
    done = run_all(run_one, twin, [tasks[i] for i in order], jobs, desc=desc)
    out: list = [None] * len(tasks)
    for i, r in zip(order, done):
        out[i] = r
    return out


def _cost(task: tuple[Candidate, bool, str]) -> float:
    """A replay's relative cost, only to order the work (measured on large.yaml: the DQN ~10x a static ranking,
    a dynamic one ~2x)."""
    cand, backfill, scope = task
    name = cand.spec.name
    base = 10.0 if name == "dqn" else 1.0 if name in ("fcfs", "sjf") and not cand.spec.age_floor else 2.0
    return base * (1.5 if scope == "whole" else 1.0) * (1.2 if backfill else 1.0)
