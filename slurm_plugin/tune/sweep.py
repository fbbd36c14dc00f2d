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

Halving only as far as the budget requires (:func:`budget_cut`, when the halving was not forced by ``--halving``):
after each rung, every candidate still in the race has a measured CPU time on that rung's prefix (each replay timed
in the process that ran it); its cost on the whole tuning part is extrapolated as ``cpu * (jobs_full /
jobs_rung) ** GROWTH`` (:func:`extrapolate`). :data:`GROWTH` = 1.3 is the steepest growth measured on the 100k
history (``results/tune/halving/replay-cost-*.jsonl``: FCFS x14.1 for x9 jobs = jobs^1.20, SJF+floor x4.15 for x3
= jobs^1.30, session 11's x3.8 / x3.6 for x3 = jobs^1.23 / 1.16), so the estimate errs high. The estimate adds
what the rungs already cost and the replays the sweep makes after the tuning part whatever the halving keeps
(per backfill mode: the weighted fits with the floor, one per rolling origin and the whole part, and the winner
and runner-up on the whole history, each at the mode's mean estimate; the whole history's at
``(jobs_whole / jobs_tune) ** GROWTH`` of it). If every candidate fits the ranking sweep's budget, none is dropped
(halving skipped); else, if today's leaders fit, they go on to the whole tuning part with the next best (by gap
behind their family's best on the rung, across families and modes) until the next would not fit; else the rung
cuts as before and the next rung decides again. Not counted: the evaluation protocol's held-back replays of every
fixed ranking and the tie-break at raised load (they do not depend on what the halving keeps).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..sim.policy import sim_ranking
from ..sim.run import Prepared, simulate
from .candidates import Candidate
from .score import Score, score
from .select import BOUND_PRICE, within_bound
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
GROWTH = 1.3  # a replay's CPU grows as jobs ** GROWTH (the steepest measured; see the module's docstring)
BUDGET_CPU_S = 1800.0  # the whole tune's budget (issue 13: 15 min on 2 cores); ``hetsched tune --budget-cpu-s``
RANKING_SHARE = 0.5  # ... of which the ranking sweep's halving decision may plan on this share: the rest is for
# the DQN fine-tuning (--dqn-budget, 300 CPU s by default), the power sweep (122-152 CPU s on the 100k history),
# the packing sweep (80.5) and reading the history, with room for CPU time per replay swinging with load


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


@dataclass(frozen=True)
class BudgetDecision:
    """What the budget rule (:func:`budget_cut`) decided after a rung."""

    rung: int  # 0-based
    outcome: str  # "skipped": every candidate kept; "filled": today's leaders and more; "over": today's cut
    estimate_s: float  # the ranking sweep's estimated CPU s with what was kept (with every candidate: "skipped")
    budget_s: float
    spent_s: float  # the rungs' measured CPU s so far (part of the estimate)
    full_s: float  # estimate of every candidate still in the race on the whole tuning part (+ spent + after)
    after_s: float  # estimated replays after the tuning part (weighted fits with the floor, held back)
    kept: int  # candidates going on
    alive: int  # candidates that were in the race on the rung
    growth: float

    def text(self) -> str:
        parts = (f"rungs measured {self.spent_s:.1f} + {self.kept} tuning-part replays "
                 f"{self.estimate_s - self.spent_s - self.after_s:.1f} + {self.after_s:.1f} after them, "
                 f"growth jobs^{self.growth:g}")
        if self.outcome == "skipped":
            return (f"halving skipped after rung {self.rung + 1}: full sweep estimated {self.estimate_s:.0f} CPU s "
                    f"within budget {self.budget_s:.0f} ({parts}); all {self.alive} candidates kept")
        if self.outcome == "filled":
            return (f"halving stopped after rung {self.rung + 1}: full sweep estimated {self.full_s:.0f} CPU s over "
                    f"budget {self.budget_s:.0f}; kept {self.kept} of {self.alive} (today's leaders and the next best "
                    f"while the estimate fits: {self.estimate_s:.0f} CPU s; {parts})")
        return (f"rung {self.rung + 1}: the rung's leaders alone estimated {self.estimate_s:.0f} CPU s over budget "
                f"{self.budget_s:.0f} in full ({parts}): cut as the rule says")

    def as_dict(self) -> dict:
        return {"rung": self.rung, "outcome": self.outcome, "estimate_cpu_s": self.estimate_s,
                "budget_cpu_s": self.budget_s, "spent_cpu_s": self.spent_s, "full_sweep_cpu_s": self.full_s,
                "after_cpu_s": self.after_s, "kept": self.kept, "alive": self.alive, "growth": self.growth,
                "text": self.text()}


@dataclass
class Halving:
    """What the halving kept (per backfill mode, the candidates replayed on the whole tuning part) and dropped."""

    kept: dict[bool, list]
    dropped: list[Drop]
    rungs: list[tuple[float, int, int]]  # (share, jobs, replays) per rung
    budget_s: float | None = None  # the ranking sweep's budget (None: the halving was forced: no budget rule)
    decisions: list[BudgetDecision] = field(default_factory=list)  # the budget rule's, one per rung it ran on
    cpu: dict[tuple[str, bool, int], float] = field(default_factory=dict)  # (label, backfill, rung) -> CPU s
    full_cpu: dict[tuple[str, bool], float] = field(default_factory=dict)  # (label, backfill) -> on the tuning part
    tune_jobs: int = 0

    def growth_measured(self) -> list[float]:
        """Per candidate replayed on rung 1 and on the whole tuning part: the exponent a of cpu ~ jobs^a between
        them (tests :data:`GROWTH` on every run)."""
        if not self.rungs or not self.tune_jobs:
            return []
        n1 = self.rungs[0][1]
        out = []
        for (lab, bf), full in self.full_cpu.items():
            c1 = self.cpu.get((lab, bf, 0))
            if c1 and full > 0 and self.tune_jobs > n1:
                out.append(math.log(full / c1) / math.log(self.tune_jobs / n1))
        return out


def extrapolate(cpu_s: float, jobs_from: int, jobs_to: int, growth: float = GROWTH) -> float:
    """A replay's CPU s on ``jobs_to`` jobs from its measured ``cpu_s`` on a prefix of ``jobs_from``."""
    return cpu_s * (jobs_to / jobs_from) ** growth


def budget_cut(today: dict, rest: list[tuple], cost: dict[tuple, float], fixed_s: float,
               budget_s: float) -> tuple[dict | None, float, float, str]:
    """The budget rule's decision after a rung (pure). ``today``: key -> the labels today's rule keeps;
    ``rest``: the other (key, label) pairs in the order they would be added, best first; ``cost``: (key, label)
    -> estimated CPU s on the whole tuning part; ``fixed_s``: what the sweep costs anyway (rungs spent, replays
    after the tuning part). Returns (kept: key -> labels, or None when today's leaders alone do not fit; the
    estimate with what is kept (today's, when None); the estimate with every candidate; outcome)."""
    full = fixed_s + sum(cost.values())
    if full <= budget_s:
        kept = {k: list(labs) for k, labs in today.items()}
        for k, lab in rest:
            kept.setdefault(k, []).append(lab)
        return kept, full, full, "skipped"
    est = fixed_s + sum(cost[(k, lab)] for k, labs in today.items() for lab in labs)
    if est > budget_s:
        return None, est, full, "over"
    kept = {k: list(labs) for k, labs in today.items()}
    for k, lab in rest:
        if est + cost[(k, lab)] > budget_s:
            break
        est += cost[(k, lab)]
        kept.setdefault(k, []).append(lab)
    return kept, est, full, "filled"


def _gap(lab: str, scores: dict[str, Score], bound_s: float | None,
         price: float | None = BOUND_PRICE) -> tuple[int, float]:
    """Order of the candidates today's rule drops, for adding them back: within the bound first, then by how far
    behind their family's best (relative)."""
    ok = within_bound(scores, bound_s, price)
    best = min(scores[x].objective for x in ok)
    rel = scores[lab].objective / best - 1 if best > 0 else scores[lab].objective - best
    return (0 if lab in ok else 1, rel)


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
            margin: float | None = None, price: float | None = BOUND_PRICE) -> list[str]:
    """Labels (in ``scores``' order) that go on from a rung: the ``keep`` (default :data:`KEEP`) best objectives
    among those within ``bound_s`` by max wait (:func:`.select.within_bound`: all, when none is or keeping it
    costs over ``price``), and every such candidate within ``margin`` (default :data:`MARGIN`) of the best."""
    keep = KEEP if keep is None else keep
    margin = MARGIN if margin is None else margin
    ok = within_bound(scores, bound_s, price)
    ranked = sorted(ok, key=lambda lab: scores[lab].objective)
    best = scores[ranked[0]].objective
    kept = set(ranked[:keep]) | {lab for lab in ranked if scores[lab].objective <= best * (1 + margin) + 1e-12}
    return [lab for lab in scores if lab in kept]


def _why_dropped(lab: str, scores: dict[str, Score], bound_s: float | None, keep: int,
                 margin: float, price: float | None = BOUND_PRICE) -> tuple[str, str]:
    """(the family's best label, why ``lab`` did not go on): over the bound, or behind the kept ones."""
    ok = within_bound(scores, bound_s, price)
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
          desc: str = "tune", ledger: dict[str, float] | None = None, budget_s: float | None = None,
          growth: float = GROWTH, bound_price: float | None = BOUND_PRICE) -> Halving:
    """Successive halving on growing prefixes of the tuning part: every candidate of every family is replayed on
    the first ``rungs[0]`` of its jobs (one parallel round per rung), each family keeps its best 1/``eta`` (at
    least :data:`KEEP`, within the bound by max wait; plus any within :data:`MARGIN` of the best) per backfill
    mode for the next rung; the last rung's survivors go on to the whole tuning part (``ledger``: as
    :func:`replay`'s, one phase per rung). ``families``: name ->
    (candidates, the part whose objective ranks them: ``val`` for candidates compared as they are, ``all`` for
    a family fitted on it). ``budget_s`` (None: the cut above, always): after each rung the budget rule
    (:func:`budget_cut`, the module's docstring) keeps every candidate, or today's leaders and the next best,
    when their estimated cost on the whole tuning part fits, and then stops the halving there. ``bound_price``:
    the bound's price limit (:mod:`.select`, rule 1)."""
    alive = {(name, bf): list(cands) for bf in backfills for name, (cands, _) in families.items()}
    dropped: list[Drop] = []
    done: list[tuple[float, int, int]] = []
    n_tune = len(twin.tune.workload.jobs)
    out = Halving({}, dropped, done, budget_s, tune_jobs=n_tune)
    spent = 0.0
    for r, share in enumerate(rungs):
        pre = screen_twin(twin, share)
        n_jobs = len(pre.tune.workload.jobs)
        tasks = [(c, bf, "tune") for (_, bf), cands in alive.items() for c in cands]
        cpus: list[float] = []
        got = {(c.label, bf): res for (c, bf, _), res in
               zip(tasks, replay(pre, tasks, jobs, f"{desc} (rung {r + 1}: {n_jobs} jobs)", ledger,
                                  f"halving rung {r + 1} ({n_jobs} jobs, {len(tasks)} replays)", cpus))}
        for (c, bf, _), cpu in zip(tasks, cpus):
            out.cpu[(c.label, bf, r)] = cpu
        spent += sum(cpus)
        done.append((share, n_jobs, len(tasks)))
        today: dict = {}
        scores_of: dict = {}
        for (name, bf), cands in alive.items():
            scores = {c.label: got[(c.label, bf)][families[name][1]] for c in cands}
            scores_of[(name, bf)] = scores
            keep = max(KEEP, math.ceil(len(cands) / eta))
            today[(name, bf)] = leaders(scores, bound_s, keep, price=bound_price)
        cut = None
        if budget_s is not None:
            cost = {(k, c.label): extrapolate(out.cpu[(c.label, k[1], r)], n_jobs, n_tune, growth)
                    for k, cands in alive.items() for c in cands}
            after = _after_tuning_part(twin, cost, backfills, growth)
            rest = sorted(((k, c.label) for k, cands in alive.items() for c in cands if c.label not in today[k]),
                          key=lambda kl: _gap(kl[1], scores_of[kl[0]], bound_s, bound_price))
            cut, est, full, outcome = budget_cut(today, rest, cost, spent + after, budget_s)
            n_kept = sum(map(len, (cut or today).values()))
            out.decisions.append(BudgetDecision(r, outcome, est, budget_s, spent, full, after, n_kept,
                                                len(cost), growth))
            log.info("%s", out.decisions[-1].text())
        keep_now = cut or today
        for (name, bf), cands in alive.items():
            scores = scores_of[(name, bf)]
            kept = set(keep_now.get((name, bf), []))
            keep = max(KEEP, math.ceil(len(cands) / eta))
            for c in cands:
                if c.label not in kept:
                    best, why = _why_dropped(c.label, scores, bound_s, keep, MARGIN, bound_price)
                    if cut is not None:
                        why += f"; the budget had no room for it ({out.decisions[-1].estimate_s:.0f} of " \
                               f"{budget_s:.0f} CPU s planned)"
                    sc = scores[c.label]
                    dropped.append(Drop(c.label, bf, r, n_jobs, sc.objective, sc.max_wait_s, best,
                                        scores[best].objective, why))
            alive[(name, bf)] = [c for c in cands if c.label in kept]
        if cut is not None:  # the budget decided: no further rung
            break
    out.kept = {bf: [c for name in families for c in alive[(name, bf)]] for bf in backfills}
    return out


def _after_tuning_part(twin: Twin, cost: dict[tuple, float], backfills: tuple[bool, ...], growth: float) -> float:
    """Estimated CPU s of the ranking sweep's replays after the tuning part, whatever the halving keeps: per
    backfill mode the weighted fits with the floor (one per rolling origin and the whole part, at most) and the
    winner and runner-up on the whole history, each at the mode's mean estimate on the tuning part."""
    whole = (len(twin.whole.workload.jobs) / max(len(twin.tune.workload.jobs), 1)) ** growth
    total = 0.0
    for bf in backfills:
        vals = [v for (k, _), v in cost.items() if k[1] == bf]
        if vals:
            mean = sum(vals) / len(vals)
            total += mean * (twin.folds + 1) + 2 * mean * whole
    return total


def replay(twin: Twin, tasks: list[tuple[Candidate, bool, str]], jobs: int | None = None,
           desc: str = "tune", ledger: dict[str, float] | None = None, phase: str | None = None,
           cpus: list[float] | None = None) -> list[dict[str, Score]]:
    """:func:`run_one` over ``tasks`` on ``jobs`` processes (None: every core), results in task order. The
    longest replays are handed out first (whole history before the tuning part, the DQN, then the rankings
    re-scored at every pass, then the static ones), so no core idles at the end behind one long run.
    ``ledger``: the replays' CPU seconds (each measured in the process that ran it) are added to
    ``ledger[phase]`` (default phase: ``desc``); ``cpus`` gets each task's CPU s, in task order."""
    from ..sim.parallel import run_all

    order = sorted(range(len(tasks)), key=lambda i: -_cost(tasks[i]))
    done = run_all(_timed_run_one, twin, [tasks[i] for i in order], jobs, desc=desc)
    out: list = [None] * len(tasks)
    each: list[float] = [0.0] * len(tasks)
    for i, (r, c) in zip(order, done):
        out[i] = r
        each[i] = c
    if cpus is not None:
        cpus[:] = each
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
