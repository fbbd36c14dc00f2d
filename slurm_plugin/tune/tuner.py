"""The twin's ranking sweep: choose a site's ranking from its own history, and (``evaluate``) compare the
choice with every fixed heuristic on the held-back part.

Protocol (issue 13): the history is cut by submit time into a tuning part (first 70 %) and a held-back part.
Inside the tuning part, the weighted family is fitted on the inner training jobs (its first 70 %) and every
candidate (the fixed rankings and the fitted member, with and without the age floor) is compared on the inner
validation jobs (the rest) by :func:`.select.choose`. The chosen ranking is then replayed on the whole history
and scored on the held-back jobs only: that is the prediction written into the policy file.

The max-wait bound (the age floor's promise): a job pending ``age_floor_hours`` goes first, and a job at the
head of the queue waits at most for the running jobs' time limits, so bound = floor + the longest time limit
in the tuning part.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..sim.run import Prepared
from .candidates import Candidate, fixed_candidates, label, shipped_default, weighted_grid, with_floor
from .score import Score, objective_for
from .select import Choice, Entry, choose
from .sweep import Twin, replay


@dataclass
class ModeResult:
    """Everything about one backfill mode: validation scores per candidate, the choice, held-back scores."""

    backfill: bool
    candidates: list[Candidate]
    tune_scores: dict[str, dict[str, Score]]  # label -> {"train", "val"}
    fitted: str  # the weighted member fitted on the inner training jobs (and its +floor twin)
    choice: Choice
    test_scores: dict[str, Score] = field(default_factory=dict)  # label -> held-back score

    def candidate(self, lab: str) -> Candidate:
        return next(c for c in self.candidates if c.label == lab)


@dataclass
class TuneResult:
    twin: Twin
    bound_s: float | None
    modes: dict[bool, ModeResult]
    default_label: str


def max_wait_bound(twin: Twin, floor_hours: float) -> float:
    """Age floor + the longest time limit of the tuning part (see the module's docstring)."""
    return floor_hours * 3600.0 + float(np.max(twin.tune.workload.jobs.limit))


def _fit_weighted(scores: dict[str, dict[str, Score]], grid: list[Candidate], bound_s: float | None) -> Candidate:
    """The grid member with the best objective on the inner training jobs among those within the bound
    (any member when none is)."""
    ok = [c for c in grid if bound_s is None or scores[c.label]["train"].max_wait_s <= bound_s] or grid
    return min(ok, key=lambda c: (scores[c.label]["train"].objective, c.label))


def tune_history(p: Prepared, backfills: tuple[bool, ...] = (True,), *, floor_hours: float = 24.0,
                 objective: str | None = None, bounded: bool = True, names: tuple[str, ...] | None = None,
                 evaluate_all: bool = False, z: float = 1.0, jobs: int | None = None,
                 tune_fraction: float = 0.7) -> TuneResult:
    """Tune the ranking for each backfill mode in ``backfills``. ``evaluate_all`` also replays every fixed
    candidate on the whole history (the evaluation protocol); otherwise only the winner and the runner-up are."""
    objective = objective or objective_for(p.workload.jobs, p.site)
    twin = Twin.of(p, objective, tune_fraction)
    fixed = fixed_candidates(floor_hours, names) if names else fixed_candidates(floor_hours)
    grid = weighted_grid(floor_hours)
    bound = max_wait_bound(twin, floor_hours) if bounded else None
    tasks = [(c, bf, "tune") for bf in backfills for c in fixed + grid]
    if evaluate_all:
        tasks += [(c, bf, "whole") for bf in backfills for c in fixed]
    results = replay(twin, tasks, jobs, desc=f"tune {p.workload.name}")
    got = {(c.label, b, scope): r for (c, b, scope), r in zip(tasks, results)}
    # the fitted member of each mode, then the same with the age floor (on the tuning part too)
    fit = {bf: _fit_weighted({c.label: got[(c.label, bf, "tune")] for c in grid}, grid, bound) for bf in backfills}
    floored = [(with_floor(c), bf, "tune") for bf, c in fit.items()]
    if evaluate_all:
        floored += [(c, bf, "whole") for bf, best in fit.items() for c in (best, with_floor(best))]
    for (c, bf, scope), r in zip(floored, replay(twin, floored, jobs, desc=f"tune {p.workload.name} (fitted)")):
        got[(c.label, bf, scope)] = r
    modes: dict[bool, ModeResult] = {}
    for bf in backfills:
        best = fit[bf]
        pool = fixed + [best, with_floor(best)]
        scores = {c.label: got[(c.label, bf, "tune")] for c in pool}
        entries = [Entry(c.label, c.complexity, scores[c.label]["val"].objective, scores[c.label]["val"].max_wait_s,
                         scores[c.label]["val"].blocks) for c in pool]
        ch = choose(entries, bound, z)
        tests = {lab: r["test"] for (lab, b, scope), r in got.items() if scope == "whole" and b == bf}
        modes[bf] = ModeResult(bf, pool, scores, best.label, ch, tests)
    # last round: the held-back replays still missing (the winner and the runner-up)
    more = []
    for bf, m in modes.items():
        want = [m.choice.winner] + ([m.choice.runner_up] if m.choice.runner_up else [])
        more += [(m.candidate(lab), bf, "whole") for lab in dict.fromkeys(want) if lab not in m.test_scores]
    if more:
        for (c, bf, _), r in zip(more, replay(twin, more, jobs, desc=f"tune {p.workload.name} (held back)")):
            modes[bf].test_scores[c.label] = r["test"]
    return TuneResult(twin, bound, modes, label(shipped_default(floor_hours)))
