"""Replay candidates in the simulator, in parallel (:func:`slurm_plugin.sim.parallel.run_all`, one progress
bar over all runs), and score each run on the parts of its jobs it is judged on.

A run is (candidate, backfill, scope): scope ``tune`` simulates only the tuning part (scored on the inner
training jobs and on the inner validation jobs); ``stress`` the same at raised load (``Twin.stress``);
``whole`` simulates the whole history (scored on the held-back
jobs only, so the machine is not empty when the test period begins).

Successive halving (:func:`halve`, for long histories): every candidate is replayed on a short prefix of the tuning
part (its first ninth of jobs, then a third: :data:`RUNGS`; each prefix cut and scored as the tuning part is: inner
training / validation blocks); each family keeps its best third (at least :data:`KEEP`, plus any within
:data:`MARGIN` of its best) for the next, longer prefix, and the last rung's survivors go on to the whole tuning
part. A replay costs more than linearly in jobs (longer queues), so the short rungs are cheap; what halving can
lose is a candidate that trails on a prefix and would lead on the whole part, which the margin and the floor of
:data:`KEEP` per family guard against. Every candidate left out is recorded (:class:`Drop`: rung, objective, why)
for ``--explain``.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, replace

import numpy as np

from ..sim.policy import sim_ranking
from ..sim.run import Prepared, simulate
from .candidates import Candidate
from .score import Score, score
from .split import Split, fold_masks, held_back_mask, rolling_origins, split_history, tune_part

log = logging.getLogger(__name__)


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


RUNGS = (1 / 9, 1 / 3)  # successive halving: the prefixes (shares of the tuning part's jobs) before the whole part
ETA = 3  # ... each rung keeps the best 1/ETA of each family (at least KEEP) ...
RACE_MIN_JOBS = 40_000  # halve when the tuning part has at least this many jobs (smaller: every candidate in full)
KEEP = 3  # ... at least this many leaders per family (fixed rankings / the weighted grid) and backfill mode ...
MARGIN = 0.10  # ... plus every candidate within this fraction of its family's best objective on the rung
SCREEN_FRACTION = RUNGS[0]


@dataclass(frozen=True)
class Drop:
    """A candidate left out at a rung of the halving (:func:`halve`), and why."""

    label: str
    backfill: bool
    rung: int  # 0-based
    jobs: int  # the rung's prefix of the tuning part
    objective: float
    max_wait_s: float
    best: str  # its family's best on the rung (within the bound)
    best_objective: float
    reason: str

    def as_dict(self) -> dict:
        return {"label": self.label, "backfill": self.backfill, "rung": self.rung, "jobs": self.jobs,
                "objective": self.objective, "max_wait_s": self.max_wait_s, "best": self.best,
                "best_objective": self.best_objective, "reason": self.reason}


@dataclass
class Halving:
    """What the halving kept (per backfill mode, the candidates replayed on the whole tuning part) and dropped."""

    kept: dict[bool, list]
    dropped: list[Drop]
    rungs: list[tuple[float, int, int]]  # (share, jobs, replays) per rung


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
    """Labels (in ``scores``' order) that go on from a rung: the ``keep`` (default :data:`KEEP`) best objectives
    among those within ``bound_s`` by max wait (all, when none is), and every such candidate within ``margin``
    (default :data:`MARGIN`) of the best."""
    keep = KEEP if keep is None else keep
    margin = MARGIN if margin is None else margin
    ok = [lab for lab, sc in scores.items() if bound_s is None or sc.max_wait_s <= bound_s] or list(scores)
    ranked = sorted(ok, key=lambda lab: scores[lab].objective)
    best = scores[ranked[0]].objective
    kept = set(ranked[:keep]) | {lab for lab in ranked if scores[lab].objective <= best * (1 + margin) + 1e-12}
    return [lab for lab in scores if lab in kept]


def _why_dropped(lab: str, scores: dict[str, Score], bound_s: float | None, keep: int,
                 margin: float) -> tuple[str, str]:
    """(the family's best label, why ``lab`` did not go on): over the bound, or behind the kept ones."""
    ok = [x for x, sc in scores.items() if bound_s is None or sc.max_wait_s <= bound_s] or list(scores)
    ranked = sorted(ok, key=lambda x: scores[x].objective)
    best = ranked[0]
    sc = scores[lab]
    if lab not in ok:
        return best, f"max wait {sc.max_wait_s:.0f} s over the bound {bound_s:.0f} s"
    behind = sc.objective / scores[best].objective - 1 if scores[best].objective else math.inf
    return best, (f"rank {ranked.index(lab) + 1} of {len(scores)}, {behind:+.1%} behind {best}: not among the best "
                  f"{keep} nor within {margin:.0%}")


def halve(twin: Twin, families: dict[str, tuple[list[Candidate], str]], backfills: tuple[bool, ...],
          bound_s: float | None, jobs: int | None = None, rungs: tuple[float, ...] = RUNGS, eta: int = ETA,
          desc: str = "tune", ledger: dict[str, float] | None = None) -> Halving:
    """Successive halving on growing prefixes of the tuning part: every candidate of every family is replayed on
    the first ``rungs[0]`` of its jobs (one parallel round per rung), each family keeps its best 1/``eta`` (at
    least :data:`KEEP`, within the bound by max wait; plus any within :data:`MARGIN` of the best) per backfill
    mode for the next rung; the last rung's survivors go on to the whole tuning part (``ledger``: as
    :func:`replay`'s, one phase per rung). ``families``: name ->
    (candidates, the part whose objective ranks them: ``val`` for candidates compared as they are, ``all`` for
    a family fitted on it)."""
    alive = {(name, bf): list(cands) for bf in backfills for name, (cands, _) in families.items()}
    dropped: list[Drop] = []
    done: list[tuple[float, int, int]] = []
    for r, share in enumerate(rungs):
        pre = screen_twin(twin, share)
        n_jobs = len(pre.tune.workload.jobs)
        tasks = [(c, bf, "tune") for (_, bf), cands in alive.items() for c in cands]
        got = {(c.label, bf): res for (c, bf, _), res in
               zip(tasks, replay(pre, tasks, jobs, f"{desc} (rung {r + 1}: {n_jobs} jobs)", ledger,
                                  f"halving rung {r + 1} ({n_jobs} jobs, {len(tasks)} replays)"))}
        done.append((share, n_jobs, len(tasks)))
        for (name, bf), cands in alive.items():
            part = families[name][1]
            scores = {c.label: got[(c.label, bf)][part] for c in cands}
            keep = max(KEEP, math.ceil(len(cands) / eta))
            kept = set(leaders(scores, bound_s, keep))
            for c in cands:
                if c.label not in kept:
                    best, why = _why_dropped(c.label, scores, bound_s, keep, MARGIN)
                    sc = scores[c.label]
                    dropped.append(Drop(c.label, bf, r, n_jobs, sc.objective, sc.max_wait_s, best,
                                        scores[best].objective, why))
            alive[(name, bf)] = [c for c in cands if c.label in kept]
    kept_by_mode = {bf: [c for name in families for c in alive[(name, bf)]] for bf in backfills}
    return Halving(kept_by_mode, dropped, done)


def replay(twin: Twin, tasks: list[tuple[Candidate, bool, str]], jobs: int | None = None,
           desc: str = "tune", ledger: dict[str, float] | None = None, phase: str | None = None
           ) -> list[dict[str, Score]]:
    """:func:`run_one` over ``tasks`` on ``jobs`` processes (None: every core), results in task order. The
    longest replays are handed out first (whole history before the tuning part, the DQN, then the rankings
    re-scored at every pass, then the static ones), so no core idles at the end behind one long run.
    ``ledger``: the replays' CPU seconds (each measured in the process that ran it) are added to
    ``ledger[phase]`` (default phase: ``desc``)."""
    from ..sim.parallel import run_all

    order = sorted(range(len(tasks)), key=lambda i: -_cost(tasks[i]))
    done = run_all(_timed_run_one, twin, [tasks[i] for i in order], jobs, desc=desc)
    out: list = [None] * len(tasks)
    for i, (r, _) in zip(order, done):
        out[i] = r
    cpu = sum(c for _, c in done)
    log.info("%s: %d replay(s), %.1f CPU s", phase or desc, len(tasks), cpu)  # a stopped run still tells
    if ledger is not None:
        key = phase or desc
        ledger[key] = ledger.get(key, 0.0) + cpu
    return out


def _timed_run_one(twin: Twin, task: tuple[Candidate, bool, str]) -> tuple[dict[str, Score], float]:
    t0 = time.process_time()
    r = run_one(twin, task)
    return r, time.process_time() - t0


def _cost(task: tuple[Candidate, bool, str]) -> float:
    """A replay's relative cost, only to order the work (measured on large.yaml: the DQN ~10x a static ranking,
    a dynamic one ~2x)."""
    cand, backfill, scope = task
    name = cand.spec.name
    base = 10.0 if name == "dqn" else 1.0 if name in ("fcfs", "sjf") and not cand.spec.age_floor else 2.0
    return base * (1.5 if scope == "whole" else 1.0) * (1.2 if backfill else 1.0)
