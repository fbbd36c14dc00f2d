"""Power tuning (issue 13, item 3): a planner setting that uses no more energy at no more wait than Slurm's idle
timer, found on the tuning part of a site's history and checked on the held-back part, or the timer kept.

Candidates (:func:`candidates`), each one simulation of the whole history (same ranking, EASY backfill):

* ``idle-timer`` at each SuspendTime of ``timers`` (default 60, 300, 900, 1800, 3600 s);
* ``planner``: the break-even rule (:func:`slurm_plugin.scale.warm.warm_target`) at each wait price, and
  ``planner+arch`` the same with the architecture controller when the machine has CPU groups of two or more
  architectures (on one architecture it changes nothing, so it is not run);
* ``demand-timer``: the planner's demand-aware idle timer (:func:`slurm_plugin.scale.warm.demand_timer`) at
  (grace, quiet grace) pairs: every idle node goes down after ``grace_s``, and nodes beyond the node demand
  expected within ``grace_s`` after ``quiet_grace_s``. With ``quiet_grace_s = grace_s`` it is the idle timer at
  ``grace_s`` (same schedule, same energy: ``tests/unit/tune/test_power.py``), so the search along it starts
  from the timer; a longer ``grace_s`` (fewer boots while jobs keep arriving) with a shorter ``quiet_grace_s``
  (idle nodes off sooner when no job is expected) is how it can beat the timer on both.

Scores (:func:`part_scores`): energy over the tuning period (first submit to the first held-back submit) and
over the held-back period (from there to the run's end); average wait of the tuning jobs and of the held-back
jobs. Selection (:func:`match_timers`, pure): for each timer setting, the planner settings that use no more
energy at no more average wait on the tuning part; the one with the least energy is checked on the held-back
part; if it holds there it replaces that timer, else (or with no candidate) the timer stays, with the reason.
The site's own SuspendTime (``suspend_time_s``) picks which of these becomes the policy file's ``scaling:``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ..policy.spec import RankingSpec, ScalingSpec
from .split import Split, held_back_mask

log = logging.getLogger(__name__)

TIMER_SUSPEND_S = (60.0, 300.0, 900.0, 1800.0, 3600.0)
# (grace_s, quiet_grace_s): longer graces for nodes that demand may need, shorter for the rest
DEMAND_GRID = ((300.0, 60.0), (900.0, 60.0), (900.0, 300.0), (1800.0, 300.0), (1800.0, 900.0), (3600.0, 300.0),
               (3600.0, 900.0), (7200.0, 900.0))
WAIT_PRICES_W = (1000.0, 10000.0)
DEFAULT_SUSPEND_S = 300.0  # the timer whose wait budget a site without a SuspendTime is held to


@dataclass(frozen=True)
class PowerCandidate:
    """One power setting: ``policy`` (idle-timer, planner, planner+arch, demand-timer), ``param`` (its
    parameters in words) and the :class:`ScalingSpec` that runs it (simulated and live)."""

    policy: str
    param: str
    scaling: ScalingSpec

    @property
    def is_timer(self) -> bool:
        return self.policy == "idle-timer"


def _s(v: float) -> str:
    return f"{v:g} s"


def candidates(multi_arch: bool, timers: Sequence[float] = TIMER_SUSPEND_S,
               grid: Sequence[tuple[float, float]] = DEMAND_GRID,
               prices: Sequence[float] = WAIT_PRICES_W) -> list[PowerCandidate]:
    """Every candidate, timers first. ``multi_arch``: the machine has CPU groups of two or more architectures
    (only then is ``planner+arch`` a different policy)."""
    out = [PowerCandidate("idle-timer", f"SuspendTime {_s(t)}", ScalingSpec(name="idle-timer", suspend_time_s=t))
           for t in timers]
    for price in prices:
        for arch in (False, True) if multi_arch else (False,):
            out.append(PowerCandidate("planner+arch" if arch else "planner", f"wait price {price:g} W",
                                 ScalingSpec(name="planner", wait_price_w=price, arch=arch, pid=False)))
    for grace, quiet in grid:
        if quiet >= grace:
            raise ValueError(f"demand-timer ({grace:g}, {quiet:g}): the quiet grace must be shorter than the grace "
                             "(equal is the idle timer itself)")
        out.append(PowerCandidate("demand-timer", f"grace {_s(grace)}, quiet {_s(quiet)}",
                             ScalingSpec(name="planner", wait_price_w=None, grace_s=grace, quiet_grace_s=quiet)))
    return out


@dataclass(frozen=True)
class Part:
    """Energy and average wait of one part (tuning or held-back) of a run."""

    energy_kwh: float
    avg_wait_s: float
    jobs: int

    def dominates(self, other: Part) -> bool:
        """No more energy at no more average wait (ties count)."""
        return self.energy_kwh <= other.energy_kwh and self.avg_wait_s <= other.avg_wait_s


def energy_between(timeline: dict, t0: float, t1: float) -> float:
    """Joules over ``[t0, t1)`` from the engine's timeline (``watts[i]`` is drawn from ``t[i]`` to ``t[i+1]``)."""
    t = np.asarray(timeline["t"], dtype=float)
    w = np.asarray(timeline["watts"], dtype=float)
    if len(t) < 2:
        return 0.0
    lo, hi = np.maximum(t[:-1], t0), np.minimum(t[1:], t1)
    return float((w[:-1] * np.maximum(hi - lo, 0.0)).sum())


def part_scores(submit: np.ndarray, begin: np.ndarray, timeline: dict, split: Split) -> tuple[Part, Part]:
    """(tuning part, held-back part) of one run: energy over each period, average wait of each part's jobs (a
    job never started waits until the run's end)."""
    end = float(timeline["t"][-1]) if timeline["t"] else float(submit.max())
    wait = np.where(np.isnan(begin), end, begin) - submit
    test = held_back_mask(split)
    start = float(submit[0])
    parts = []
    for mask, (t0, t1) in ((~test, (start, split.cut_time)), (test, (split.cut_time, math.inf))):
        parts.append(Part(energy_between(timeline, t0, t1) / 3.6e6, float(wait[mask].mean()), int(mask.sum())))
    return parts[0], parts[1]


@dataclass(frozen=True)
class TimerMatch:
    """The outcome for one timer setting: ``timer`` and ``pick`` are candidate indices (``pick`` None: no planner
    setting dominated the timer on the tuning part); ``outcome`` is ``planner`` when the pick also dominates on
    the held-back part, else ``timer``; ``reason`` says why in numbers."""

    suspend_time_s: float
    timer: int
    pick: int | None
    dominating_on_tune: int
    held_back_dominates: bool | None
    outcome: str
    reason: str


def match_timers(cands: Sequence[PowerCandidate], tune: Sequence[Part], test: Sequence[Part]) -> list[TimerMatch]:
    """For each timer candidate: the non-timer candidates that dominate it on the tuning part, the one of them
    with the least tuning energy (then wait, then order), and whether it dominates on the held-back part. Pure."""
    out = []
    for ti, c in enumerate(cands):
        if not c.is_timer:
            continue
        ok = [i for i, other in enumerate(cands) if not other.is_timer and tune[i].dominates(tune[ti])]
        t_tune, t_test = tune[ti], test[ti]
        if not ok:
            out.append(TimerMatch(c.scaling.suspend_time_s, ti, None, 0, None, "timer",
                                  f"no planner setting used no more energy at no more wait than the timer on the "
                                  f"tuning part ({t_tune.energy_kwh:.1f} kWh, {t_tune.avg_wait_s:.0f} s)"))
            continue
        pick = min(ok, key=lambda i: (tune[i].energy_kwh, tune[i].avg_wait_s, i))
        p = test[pick]
        holds = p.dominates(t_test)
        where = (f"{cands[pick].policy} {cands[pick].param}: held-back {p.energy_kwh:.1f} kWh, {p.avg_wait_s:.0f} s "
                 f"vs the timer's {t_test.energy_kwh:.1f} kWh, {t_test.avg_wait_s:.0f} s")
        out.append(TimerMatch(c.scaling.suspend_time_s, ti, pick, len(ok), holds, "planner" if holds else "timer",
                              ("dominates on the tuning and held-back parts: " if holds else
                               "dominated on the tuning part but not on the held-back part, timer kept: ") + where))
    return out


def chosen_index(cands: Sequence[PowerCandidate], matches: Sequence[TimerMatch], suspend_time_s: float) -> int:
    """The candidate that becomes the policy file's ``scaling:``: for the site's SuspendTime, the planner pick
    when it held on the held-back part, else that timer."""
    m = next((m for m in matches if m.suspend_time_s == suspend_time_s), None)
    if m is None:
        raise ValueError(f"SuspendTime {suspend_time_s:g} s is not among the timers tried "
                         f"({', '.join(f'{x.suspend_time_s:g}' for x in matches)})")
    return m.pick if m.outcome == "planner" and m.pick is not None else m.timer


@dataclass
class PowerTuning:
    """The candidates, their scores, the per-timer matches and the chosen setting (:meth:`rows` are the issue's
    JSON ``power`` rows, scored on the held-back part)."""

    candidates: list[PowerCandidate]
    tune: list[Part]
    test: list[Part]
    matches: list[TimerMatch]
    chosen: int
    suspend_time_s: float
    split: Split
    notes: list[str] = field(default_factory=list)

    @property
    def scaling(self) -> ScalingSpec:
        """The policy file's ``scaling:`` section."""
        return self.candidates[self.chosen].scaling

    def rows(self) -> list[dict]:
        """One row per candidate; a timer's row also says what the tuner keeps for a site running it
        (``outcome``: planner or timer, ``reason``)."""
        by_timer = {m.timer: m for m in self.matches}
        rows = []
        for i, c in enumerate(self.candidates):
            row = {"policy": c.policy, "param": c.param, "energy_kwh": self.test[i].energy_kwh,
                   "avg_wait_s": self.test[i].avg_wait_s, "chosen": i == self.chosen,
                   "tune": {"energy_kwh": self.tune[i].energy_kwh, "avg_wait_s": self.tune[i].avg_wait_s},
                   "scaling": scaling_section(c.scaling)}
            if i in by_timer:
                row.update(outcome=by_timer[i].outcome, reason=by_timer[i].reason)
            rows.append(row)
        return rows

    def as_dict(self) -> dict:
        return {"power": self.rows(), "timers": [asdict(m) for m in self.matches],
                "suspend_time_s": self.suspend_time_s, "scaling": scaling_section(self.scaling),
                "split": self.split.as_dict(), "notes": self.notes}


def scaling_section(spec: ScalingSpec) -> dict:
    """The keys of ``spec`` its scaling choice reads (what a policy file's ``scaling:`` holds)."""
    if spec.name == "idle-timer":
        return {"name": "idle-timer", "suspend_time_s": spec.suspend_time_s}
    if spec.quiet_grace_s is not None:
        return {"name": "planner", "wait_price_w": None, "grace_s": spec.grace_s,
                "quiet_grace_s": spec.quiet_grace_s, "window_s": spec.window_s}
    return {"name": spec.name, "wait_price_w": spec.wait_price_w, "arch": spec.arch, "pid": spec.pid}


def _simulate(shared, i: int) -> tuple[Part, Part]:
    """One candidate's run (module level: the parallel workers call it)."""
    from ..sim.engine import Engine
    from ..sim.policy import sim_ranking, sim_scaling

    prepared, cands, rank_spec, split, backfill = shared
    jobs, machine = prepared.workload.jobs, prepared.machine
    rank = sim_ranking(rank_spec, prepared.site, float(machine.cores))
    out = Engine(machine, jobs, rank, backfill=backfill, scaling=sim_scaling(cands[i].scaling, machine, jobs)).run()
    return part_scores(jobs.submit, out.begin, out.timeline, split)


def tune_power(prepared, split: Split, ranking: str | RankingSpec = "fcfs", jobs: int | None = None,
               progress: Callable[[int, int], None] | None = None, suspend_time_s: float | None = None,
               timers: Sequence[float] = TIMER_SUSPEND_S, grid: Sequence[tuple[float, float]] = DEMAND_GRID,
               prices: Sequence[float] = WAIT_PRICES_W, backfill: bool = True) -> PowerTuning:
    """Run every candidate on the whole history (``jobs`` processes; ``progress(done, total)`` as runs finish;
    EASY backfill unless ``backfill`` is False) and select. ``suspend_time_s``: the site's timer (default: the
    site file's ``slurm.suspend_time`` when set, else 300 s); it is added to ``timers`` if missing. ``ranking``: the ranking every run uses (name or spec; the age
    floor off for a bare name)."""
    from ..sim.parallel import run_all

    rank_spec = ranking if isinstance(ranking, RankingSpec) else RankingSpec(name=ranking, age_floor=False)
    if suspend_time_s is None:
        site_t = prepared.site.slurm.suspend_time if prepared.site is not None else -1
        suspend_time_s = float(site_t) if site_t > 0 else DEFAULT_SUSPEND_S
    timers = sorted(set(map(float, timers)) | {float(suspend_time_s)})
    archs = {g.arch for g in prepared.machine.groups if not g.gres}
    cands = candidates(len(archs) >= 2, timers, grid, prices)
    notes = [] if len(archs) >= 2 else [f"planner+arch not run: every CPU group is {archs.pop() if archs else '-'}"
                                         " (the architecture controller has nothing to move)"]
    done = [0]

    def tick(_i, _r) -> None:
        done[0] += 1
        if progress:
            progress(done[0], len(cands))

    scores = run_all(_simulate, (prepared, cands, rank_spec, split, backfill), list(range(len(cands))), jobs=jobs,
                     desc="power candidates", on_result=tick)
    tune, test = [s[0] for s in scores], [s[1] for s in scores]
    matches = match_timers(cands, tune, test)
    chosen = chosen_index(cands, matches, float(suspend_time_s))
    for m in matches:
        log.info("SuspendTime %g s: %s (%s)", m.suspend_time_s, m.outcome, m.reason)
    return PowerTuning(cands, tune, test, matches, chosen, float(suspend_time_s), split, notes)


def evaluate_power(twin, backfill: bool = True, jobs: int | None = None,
                   ranking: str | RankingSpec = "fcfs", **kw) -> list[dict]:
    """The issue's JSON ``power`` rows for ``hetsched tune --evaluate`` (``twin``: :class:`.sweep.Twin`, its
    whole history and split): :meth:`PowerTuning.rows`, each with ``backfill``; ``kw`` as :func:`tune_power`."""
    result = tune_power(twin.whole, twin.split, ranking, jobs=jobs, backfill=backfill, **kw)
    return [{**row, "backfill": backfill} for row in result.rows()]
