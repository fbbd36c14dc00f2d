"""The twin's ranking sweep: choose a site's ranking from its own history, and (``evaluate``) compare the
choice with every fixed heuristic on the held-back part.

Protocol (issue 13): the history is cut by submit time into a tuning part (first 70 %) and a held-back part.
Every candidate is replayed once on the tuning part and judged by rolling-origin validation
(:func:`.split.rolling_origins`): the jobs after the first origin (40 % of the tuning part) form
:data:`.split.FOLDS` consecutive blocks of equal job counts; for block k the weighted family is fitted on the
jobs before it (its best member on them, within the bound), so the "fitted weighted" candidate is judged the
way it will be used: fitted on the past, run on what comes next. The fixed rankings have nothing to fit.
:func:`.select.choose` then takes the best mean objective over the blocks, the bound applied per block, ties to
the simpler. What is deployed for the weighted family is its member fitted on the whole tuning part.
Candidates tied on validation are replayed once more on the tuning part at raised load (arrivals compressed
to :data:`.select.STRESS_LOAD` offered load, :mod:`.stress`; the weighted family as deployed) and the tie
goes to the one ahead there, else to the incumbent, else to the simpler (:mod:`.select`, rule 4).

Why this rule (written before the evaluation that uses it; the earlier rule validated on the last 30 % of
the tuning part alone): one validation window is one sample of the site's load, and the held-back part is the
next one; the mean over several consecutive windows estimates the objective on a future window with less
variance, and refitting at each origin prices the weighted family's fitting honestly instead of judging a
member picked with the validation jobs' neighbours. Equal job counts make the mean of the block objectives
the objective over all validation jobs, which is the metric the site is judged by.

The chosen ranking is then replayed on the whole history and scored on the held-back jobs only: that is the
prediction written into the policy file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..sim.run import Prepared
from .candidates import Candidate, fixed_candidates, label, shipped_default, weighted_grid, with_floor
from .score import Score, objective_for
from .select import BOUND_PRICE, STRESS_LOAD, Choice, Entry, choose, within_bound
from .stress import compressed, stress_factor
from .sweep import BUDGET_CPU_S, RACE_MIN_JOBS, RANKING_SHARE, Halving, Twin, halve, replay


@dataclass
class ModeResult:
    """Everything about one backfill mode: per-candidate scores on the tuning part, the selection table, the
    choice and the held-back scores."""

    backfill: bool
    candidates: list[Candidate]  # every one judged, plus the fixed ones the halving dropped (no tune_scores)
    tune_scores: dict[str, dict[str, Score]]  # label -> part ("train", "val", "fit{k}", "val{k}", "all") -> score
    fitted: str  # the weighted member fitted on the whole tuning part (deployed; its +floor twin too)
    fitted_at: list[str]  # the member fitted at each rolling origin (judged on the block after it)
    entries: dict[str, Entry]  # label -> what the selection saw (per-block objectives and max waits)
    choice: Choice
    test_scores: dict[str, Score] = field(default_factory=dict)  # label -> held-back score
    stressed: dict[str, Entry] = field(default_factory=dict)  # label -> validation entry at raised load (rule 4a)

    def candidate(self, lab: str) -> Candidate:
        return next(c for c in self.candidates if c.label == lab)


@dataclass
class TuneResult:
    twin: Twin
    bound_s: float | None
    modes: dict[bool, ModeResult]
    default_label: str
    notes: list[str] = field(default_factory=list)
    stress_factor: float | None = None  # arrivals compressed this many times for the tie-break (None: not needed)
    incumbent: str | None = None
    halving: Halving | None = None  # the successive halving's rungs and drops (None: every candidate in full)
    cpu: dict[str, float] = field(default_factory=dict)  # phase -> CPU s of its replays (every process's)
    bound_price: float | None = BOUND_PRICE  # the bound's price limit the choice was made under (None: any price)


def max_wait_bound(twin: Twin, floor_hours: float) -> float:
    """Age floor + the longest time limit of the tuning part (see the module's docstring)."""
    return floor_hours * 3600.0 + float(np.max(twin.tune.workload.jobs.limit))


def _fit_weighted(scores: dict[str, dict[str, Score]], grid: list[Candidate], bound_s: float | None,
                  part: str, price: float | None = BOUND_PRICE) -> Candidate:
    """The grid member with the best objective on the jobs of ``part`` among those within the bound there (any
    member when none is, or when keeping it costs over ``price``: :func:`.select.within_bound`)."""
    ok = set(within_bound({c.label: scores[c.label][part] for c in grid}, bound_s, price))
    return min((c for c in grid if c.label in ok), key=lambda c: (scores[c.label][part].objective, c.label))


def _entry(lab: str, complexity: float, blocks: list[Score]) -> Entry:
    objs = tuple(b.objective for b in blocks)
    waits = tuple(b.max_wait_s for b in blocks)
    return Entry(lab, complexity, float(np.mean(objs)), max(waits), objs, waits)


def tune_history(p: Prepared, backfills: tuple[bool, ...] = (True,), *, floor_hours: float = 24.0,
                 objective: str | None = None, bounded: bool = True, names: tuple[str, ...] | None = None,
                 evaluate_all: bool = False, z: float = 1.0, jobs: int | None = None,
                 tune_fraction: float = 0.7, extra: list[Candidate] | None = None,
                 notes: list[str] | None = None, race: bool | None = None, incumbent: str | None = None,
                 stress_load: float = STRESS_LOAD, budget_cpu_s: float = BUDGET_CPU_S,
                 bound_price: float | None = BOUND_PRICE) -> TuneResult:
    """Tune the ranking for each backfill mode in ``backfills``. ``evaluate_all`` also replays every fixed
    candidate on the whole history (the evaluation protocol); otherwise only the winner and the runner-up are.
    ``extra``: more candidates judged like the fixed ones (the DQN fine-tuned on the jobs before the first
    rolling origin: it has seen no validation job). ``race`` (None: when the tuning part has
    ``sweep.RACE_MIN_JOBS`` jobs or more) runs successive halving on growing prefixes first and replays only the
    last rung's survivors on the whole tuning part (:func:`.sweep.halve`); when it was not forced (``race`` None)
    it drops only what ``budget_cpu_s`` (the whole tune's; the ranking sweep plans on
    :data:`.sweep.RANKING_SHARE` of it) requires, by the estimate after each rung (:func:`.sweep.budget_cut`). ``incumbent``: the label of the
    ranking the site runs now (default: the shipped default's), kept on a tie nothing else breaks;
    ``stress_load``: the offered load of the tie-break replay (:mod:`.select`, rule 4); ``bound_price``: the
    max-wait bound is dropped where keeping it costs more than this factor of the best objective (:mod:`.select`,
    rule 1; None: at any price)."""
    incumbent = incumbent or label(shipped_default(floor_hours))
    objective = objective or objective_for(p.workload.jobs, p.site)
    twin = Twin.of(p, objective, tune_fraction)
    fixed = (fixed_candidates(floor_hours, names) if names else fixed_candidates(floor_hours)) + list(extra or [])
    grid = weighted_grid(floor_hours)
    bound = max_wait_bound(twin, floor_hours) if bounded else None
    forced = race is True
    if race is None:
        race = twin.split.tune_jobs >= RACE_MIN_JOBS
    halving, cpu = None, {}
    if race:  # long history: the whole tuning part only for the survivors of the halving (sweep.halve)
        halving = halve(twin, {"fixed": (fixed, "val"), "weighted": (grid, "all")}, backfills, bound, jobs,
                        desc=f"tune {p.workload.name}", ledger=cpu,
                        budget_s=None if forced else RANKING_SHARE * budget_cpu_s, bound_price=bound_price)
        kept = halving.kept
    else:
        kept = {bf: fixed + grid for bf in backfills}
    tasks = [(c, bf, "tune") for bf in backfills for c in kept[bf]]
    if evaluate_all:
        tasks += [(c, bf, "whole") for bf in backfills for c in fixed]
    n_tune = sum(t[2] == "tune" for t in tasks)
    phase = f"tuning part ({twin.split.tune_jobs} jobs, {n_tune} replays)" + (
        f" and held back (whole history, {len(tasks) - n_tune})" if evaluate_all else "")
    each: list[float] = []
    results = replay(twin, tasks, jobs, f"tune {p.workload.name}", cpu, phase, each)
    if halving is not None:
        halving.full_cpu = {(c.label, bf): t for (c, bf, scope), t in zip(tasks, each) if scope == "tune"}
    got = {(c.label, b, scope): r for (c, b, scope), r in zip(tasks, results)}
    # the weighted member fitted at each rolling origin and on the whole tuning part, then each with the floor
    parts = [f"fit{k}" for k in range(twin.folds)] + ["all"]
    grids = {bf: [c for c in grid if c in kept[bf]] for bf in backfills}
    fits = {bf: [_fit_weighted({c.label: got[(c.label, bf, "tune")] for c in grids[bf]}, grids[bf], bound, part,
                               bound_price)
                 for part in parts] for bf in backfills}
    floored = list({(with_floor(c).label, bf): (with_floor(c), bf, "tune")
                    for bf, members in fits.items() for c in members}.values())
    if evaluate_all:
        floored += [(c, bf, "whole") for bf, members in fits.items() for c in (members[-1], with_floor(members[-1]))]
    for (c, bf, scope), r in zip(floored, replay(twin, floored, jobs, f"tune {p.workload.name} (fitted)", cpu,
                                                        f"weighted fits with the floor ({len(floored)} replays)")):
        got[(c.label, bf, scope)] = r
    modes: dict[bool, ModeResult] = {}
    for bf in backfills:
        members = fits[bf]
        final = members[-1]
        ranked = [c for c in fixed if c in kept[bf]]
        pool = ranked + [final, with_floor(final)]
        scores = {c.label: got[(c.label, bf, "tune")] for c in pool}
        entries = {c.label: _entry(c.label, c.complexity, [scores[c.label][f"val{k}"] for k in range(twin.folds)])
                   for c in ranked}
        for floor in (False, True):
            dep = with_floor(final) if floor else final
            at = [with_floor(m) if floor else m for m in members[:-1]]
            entries[dep.label] = _entry(dep.label, dep.complexity,
                                        [got[(m.label, bf, "tune")][f"val{k}"] for k, m in enumerate(at)])
        ch = choose(list(entries.values()), bound, z, incumbent=incumbent, bound_price=bound_price)
        tests = {lab: r["test"] for (lab, b, scope), r in got.items() if scope == "whole" and b == bf}
        dropped = [c for c in fixed if c not in kept[bf]]  # by the halving: held-back rows still (evaluate_all)
        modes[bf] = ModeResult(bf, pool + dropped, scores, final.label, [m.label for m in members[:-1]], entries, ch,
                               tests)
    factor = _break_ties(twin, modes, bound, z, incumbent, stress_load, jobs, p.workload.name, cpu, bound_price)
    # last round: the held-back replays still missing (the winner and the runner-up)
    more = []
    for bf, m in modes.items():
        want = [m.choice.winner] + ([m.choice.runner_up] if m.choice.runner_up else [])
        more += [(m.candidate(lab), bf, "whole") for lab in dict.fromkeys(want) if lab not in m.test_scores]
    if more:
        for (c, bf, _), r in zip(more, replay(twin, more, jobs, f"tune {p.workload.name} (held back)", cpu,
                                                f"held back: winner and runner-up ({len(more)} replays)")):
            modes[bf].test_scores[c.label] = r["test"]
    return TuneResult(twin, bound, modes, label(shipped_default(floor_hours)), list(notes or []), factor, incumbent,
                      halving, cpu, bound_price)


def _break_ties(twin: Twin, modes: dict[bool, ModeResult], bound: float | None, z: float, incumbent: str,
                load: float, jobs: int | None, name: str, ledger: dict[str, float] | None = None,
                bound_price: float | None = BOUND_PRICE) -> float | None:
    """Rule 4a of :mod:`.select`: replay each mode's tied candidates on the tuning part at raised load and
    choose again with their entries there. Returns the compression factor (None: no tie, or the validation
    part is at ``load`` already)."""
    tied = {bf: m.choice.tied for bf, m in modes.items() if len(m.choice.tied) > 1}
    if not tied:
        return None
    factor = stress_factor(twin.tune.workload.jobs, twin.tune.machine, twin.origins[0], load)
    if factor is None:
        return None
    twin.stress = compressed(twin.tune, factor)
    tasks = [(modes[bf].candidate(lab), bf, "stress") for bf, labs in tied.items() for lab in labs]
    for (c, bf, _), r in zip(tasks, replay(twin, tasks, jobs, f"tune {name} (raised load x{factor:.3g})", ledger,
                                     f"tie-break at raised load ({len(tasks)} replays)")):
        modes[bf].stressed[c.label] = _entry(c.label, c.complexity, [r[f"val{k}"] for k in range(twin.folds)])
    for bf in tied:
        m = modes[bf]
        m.choice = choose(list(m.entries.values()), bound, z, stressed=list(m.stressed.values()),
                          stress_factor=factor, incumbent=incumbent, bound_price=bound_price)
    return factor
