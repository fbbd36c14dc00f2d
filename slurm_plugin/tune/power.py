"""Power tuning (issue 13, item 3): for each idle-timer SuspendTime, a planner setting that uses less energy at no
more wait than Slurm's idle timer, decided on the tuning part of a site's history only, or the timer kept.

Candidates (:func:`candidates`), each one simulation of the whole history (same ranking, EASY backfill):

* ``idle-timer`` at each SuspendTime of ``timers`` (default 60, 300, 900, 1800, 3600 s);
* ``matched-timer`` (one per timer, :func:`matched_graces`): the demand-aware idle timer
  (:func:`slurm_plugin.scale.warm.demand_timer`) built from that timer and the machine's energy break-even of a
  power cycle ``E`` (:func:`slurm_plugin.scale.warm.cycle_breakeven_s`, 156 s on the SWF default node): the idle
  nodes that the recent node arrivals say will be asked for within the grace keep ``grace = max(T, E)``, the
  others go down after ``quiet = min(T, E)``. Against a long timer it powers the surplus down once staying on
  costs more than a cycle; against a short one it stops cycling the nodes demand will reuse before a cycle pays.
  No tuned knob: ``T`` is the timer it is matched to, ``E`` comes from the node's watts and boot/shutdown times;
* ``planner``: the break-even rule (:func:`slurm_plugin.scale.warm.warm_target`) at each wait price, per group
  (expensive idle nodes go down sooner), and ``planner+arch`` the same with the architecture controller when the
  machine has CPU groups of two or more architectures (on one architecture it changes nothing, so it is not run).

Selection (:func:`match_timers`, pure), decided on the tuning part alone (the held-back part is only reported):
the tuning part is cut into ``BLOCKS`` consecutive blocks of equal job counts; a non-timer candidate *qualifies*
against the timer at ``T`` when over the whole tuning part it uses less energy (strictly: an identical schedule is
no reason to switch) at no more average wait, AND in at least ``BLOCK_WINS`` of the blocks its energy is no more
and in at least ``BLOCK_WINS`` its average wait is no more (a paired sign test: schedule noise that moves waits
by a few percent either way does not pass it, a systematic gain does). The qualifying candidate with the least
tuning energy replaces that timer; none: the timer stays. Each timer's outcome then reports, without changing
it, whether the pick also dominates the timer on the held-back part (``held_back_dominates``).
The site's own SuspendTime (``suspend_time_s``) picks which of these becomes the policy file's ``scaling:``.

Successive halving (:func:`halve_power`; on by default when the tuning part has :data:`.sweep.RACE_MIN_JOBS` jobs
or more, as the ranking sweep's, except in the evaluation, which replays every candidate for its rows anyway): every candidate is first replayed on the first ninth of the tuning part, then
the survivors on its first third (:data:`.sweep.RUNGS`), the timers always (they are what the others are judged
against). On a rung each non-timer candidate's *gap* to each timer is ``max(E/E_T - 1, W/W_T - 1)`` over the
prefix (energy to the next job's submit, average wait of the prefix's jobs; <= 0: no more energy at no more
wait). Per timer, the best 1/:data:`.sweep.ETA` of them by gap go on (at least :data:`HALVING_KEEP`: only one
can be picked per timer), plus every one within :data:`.sweep.MARGIN` of qualifying (gap <= 10 %, so anything
that may qualify on the whole tuning part survives); a candidate kept for any timer goes on. Only the last
rung's survivors and the timers are replayed on the whole history and enter the selection; every drop is
recorded (:class:`PowerDrop`: rung, its energy and wait there, its gap, the nearest candidate, why). With
``report_dropped`` (the evaluation protocol) the dropped ones are still replayed on the whole history for their
rows, but are not selectable.

Stable API (``hetsched tune``, ``cli/tune.py``, reads these; keep them):

* :func:`tune_power` ``(prepared, split, ranking="fcfs", jobs=None, progress=None, suspend_time_s=None, timers=,
  prices=, backfill=True) -> PowerTuning``; ``PowerTuning.rows()`` are the issue's JSON ``power`` rows
  ``{policy, param, energy_kwh, avg_wait_s, chosen}`` on the held-back part (plus ``tune``, ``scaling``, and on a
  timer's row ``outcome``, ``reason``, ``held_back_dominates``); ``.as_dict()``, ``.scaling`` (the chosen
  ``ScalingSpec``), ``.test[i]`` / ``.tune[i]`` (:class:`Part`), ``.chosen``;
* :func:`evaluate_power` ``(twin, backfill=True, jobs=None, ranking="fcfs", **kw) -> list[dict]``: those rows,
  each with ``backfill``;
* :func:`sweep_rows` ``(path) -> list[dict]``: the same rows from a committed ``power_eval`` JSON
  (``results/tune/power-*.json``), without re-running the sweep.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from ..policy.spec import RankingSpec, ScalingSpec
from ..scale.warm import DEFAULT_WINDOW_S, cycle_breakeven_s
from . import sweep as _sweep
from .split import Split, held_back_mask, split_history, tune_part

log = logging.getLogger(__name__)

TIMER_SUSPEND_S = (60.0, 300.0, 900.0, 1800.0, 3600.0)
WAIT_PRICES_W = (1000.0, 10000.0)
DEFAULT_SUSPEND_S = 300.0  # the timer whose wait budget a site without a SuspendTime is held to
BLOCKS = 5  # the tuning part's blocks for the paired test
BLOCK_WINS = 4  # blocks in which a candidate must be no worse, on energy and (separately) on wait
HALVING_KEEP = 1  # halving: at least this many candidates nearest to each timer go on from a rung


@dataclass(frozen=True)
class PowerCandidate:
    """One power setting: ``policy`` (idle-timer, matched-timer, planner, planner+arch), ``param`` (its
    parameters in words) and the :class:`ScalingSpec` that runs it (simulated and live)."""

    policy: str
    param: str
    scaling: ScalingSpec

    @property
    def is_timer(self) -> bool:
        return self.policy == "idle-timer"


def _s(v: float) -> str:
    return f"{v:g} s"


def machine_breakeven_s(machine) -> float:
    """The energy break-even idle gap of one power cycle (:func:`~slurm_plugin.scale.warm.cycle_breakeven_s`),
    node-weighted over the machine's groups, rounded to a whole second (exact on one node type)."""
    gs = machine.groups
    total = sum(g.count for g in gs)
    be = [cycle_breakeven_s(g.idle_w, g.off_w, g.boot_s, g.shutdown_s) for g in gs]
    return float(round(sum(g.count * min(b, 86400.0) for g, b in zip(gs, be)) / total))


def matched_graces(suspend_time_s: float, breakeven_s: float) -> tuple[float, float] | None:
    """(grace, quiet grace) of the demand-aware timer matched to the timer at ``suspend_time_s``: the nodes
    demand may need keep the longer of the two times, the rest go down after the shorter. None when they are
    equal (it would be the timer itself)."""
    grace, quiet = max(suspend_time_s, breakeven_s), min(suspend_time_s, breakeven_s)
    return None if quiet >= grace else (grace, quiet)


def candidates(multi_arch: bool, timers: Sequence[float] = TIMER_SUSPEND_S, breakeven_s: float | None = None,
               prices: Sequence[float] = WAIT_PRICES_W, window_s: float = DEFAULT_WINDOW_S) -> list[PowerCandidate]:
    """Every candidate, timers first, then one matched timer per timer (none without ``breakeven_s``), then the
    planner per wait price. ``multi_arch``: the machine has CPU groups of two or more architectures (only then
    is ``planner+arch`` a different policy)."""
    out = [PowerCandidate("idle-timer", f"SuspendTime {_s(t)}", ScalingSpec(name="idle-timer", suspend_time_s=t))
           for t in timers]
    for t in timers if breakeven_s is not None else ():
        g = matched_graces(t, breakeven_s)
        if g is not None:
            out.append(PowerCandidate("matched-timer", f"SuspendTime {_s(t)}: grace {_s(g[0])}, quiet {_s(g[1])}",
                                      ScalingSpec(name="planner", wait_price_w=None, grace_s=g[0],
                                                  quiet_grace_s=g[1], window_s=window_s)))
    for price in prices:
        for arch in (False, True) if multi_arch else (False,):
            out.append(PowerCandidate("planner+arch" if arch else "planner", f"wait price {price:g} W",
                                      ScalingSpec(name="planner", wait_price_w=price, arch=arch, pid=False)))
    return out


@dataclass(frozen=True)
class Part:
    """Energy and average wait of one part (tuning, held-back, or a block of the tuning part) of a run."""

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


@dataclass(frozen=True)
class Scores:
    """One run scored: the tuning part, the held-back part, and the tuning part's blocks."""

    tune: Part
    test: Part
    blocks: tuple[Part, ...]


def run_scores(submit: np.ndarray, begin: np.ndarray, timeline: dict, split: Split, blocks: int = BLOCKS) -> Scores:
    """Energy over each period and the average wait of its jobs (a job never started waits until the run's
    end). Tuning period: first submit to the first held-back submit; held-back: from there to the run's end;
    block ``b``: the ``b``-th of ``blocks`` equal runs of tuning jobs (submit order), from its first job's submit
    to the next block's (the last block ends at the cut)."""
    end = float(timeline["t"][-1]) if timeline["t"] else float(submit.max())
    wait = np.where(np.isnan(begin), end, begin) - submit
    test = held_back_mask(split)
    start = float(submit[0])

    def part(mask, t0, t1) -> Part:
        return Part(energy_between(timeline, t0, t1) / 3.6e6, float(wait[mask].mean()), int(mask.sum()))

    tune_p, test_p = part(~test, start, split.cut_time), part(test, split.cut_time, math.inf)
    cuts = [int(c) for c in np.linspace(0, split.boundary, blocks + 1).round()]
    bounds = [float(submit[c]) for c in cuts[:-1]] + [split.cut_time]
    bl = []
    for b in range(blocks):
        mask = np.zeros(len(submit), dtype=bool)
        mask[cuts[b]:cuts[b + 1]] = True
        bl.append(part(mask, bounds[b], bounds[b + 1]))
    return Scores(tune_p, test_p, tuple(bl))


def part_scores(submit: np.ndarray, begin: np.ndarray, timeline: dict, split: Split) -> tuple[Part, Part]:
    """(tuning part, held-back part) of one run (:func:`run_scores` without the blocks)."""
    s = run_scores(submit, begin, timeline, split)
    return s.tune, s.test


def qualifies(cand: Scores, timer: Scores, wins: int = BLOCK_WINS) -> tuple[bool, str]:
    """The tuning-part rule (module docstring): less energy and no more wait in total, and no worse in at least
    ``wins`` blocks on energy and in at least ``wins`` on wait. Returns (verdict, the numbers in words)."""
    e_wins = sum(c.energy_kwh <= t.energy_kwh for c, t in zip(cand.blocks, timer.blocks))
    w_wins = sum(c.avg_wait_s <= t.avg_wait_s for c, t in zip(cand.blocks, timer.blocks))
    ok = (cand.tune.energy_kwh < timer.tune.energy_kwh and cand.tune.avg_wait_s <= timer.tune.avg_wait_s
          and e_wins >= wins and w_wins >= wins)
    n = len(cand.blocks)
    return ok, (f"tuning part {cand.tune.energy_kwh:.1f} kWh, {cand.tune.avg_wait_s:.0f} s vs "
                f"{timer.tune.energy_kwh:.1f} kWh, {timer.tune.avg_wait_s:.0f} s; energy no more in {e_wins}/{n} "
                f"blocks, wait no more in {w_wins}/{n}")


@dataclass(frozen=True)
class TimerMatch:
    """The outcome for one timer setting, decided on the tuning part: ``timer`` and ``pick`` are candidate
    indices (``pick`` None: nothing qualified); ``outcome`` is ``planner`` when a pick qualified, else
    ``timer``; ``held_back_dominates`` (report only, None without a pick): the pick uses no more energy at no
    more average wait than the timer on the held-back part; ``reason`` says why in numbers."""

    suspend_time_s: float
    timer: int
    pick: int | None
    qualifying: int
    outcome: str
    held_back_dominates: bool | None
    reason: str


def match_timers(cands: Sequence[PowerCandidate], scores: Sequence[Scores | None],
                 wins: int = BLOCK_WINS, alive: Collection[int] | None = None) -> list[TimerMatch]:
    """For each timer candidate: the non-timer candidates that qualify against it (:func:`qualifies`, tuning
    part only), the one with the least tuning energy (then wait, then order), and, reported only, whether it
    also dominates on the held-back part. ``alive``: the non-timer candidates that may be picked (default: all;
    the halving's survivors: a dropped one is not, even when it was replayed for the report). Pure."""
    out = []
    for ti, c in enumerate(cands):
        if not c.is_timer:
            continue
        verdicts = {i: qualifies(scores[i], scores[ti], wins) for i, o in enumerate(cands)
                    if not o.is_timer and (alive is None or i in alive)}
        ok = [i for i, (v, _) in verdicts.items() if v]
        t = scores[ti]
        if not ok:
            best = min(verdicts, key=lambda i: scores[i].tune.energy_kwh, default=None)
            near = f"; least energy: {cands[best].policy} {cands[best].param}: {verdicts[best][1]}" \
                if best is not None else ""
            out.append(TimerMatch(c.scaling.suspend_time_s, ti, None, 0, "timer", None,
                                  f"nothing qualified on the tuning part (timer {t.tune.energy_kwh:.1f} kWh, "
                                  f"{t.tune.avg_wait_s:.0f} s){near}"))
            continue
        pick = min(ok, key=lambda i: (scores[i].tune.energy_kwh, scores[i].tune.avg_wait_s, i))
        p = scores[pick].test
        holds = p.dominates(t.test)
        out.append(TimerMatch(
            c.scaling.suspend_time_s, ti, pick, len(ok), "planner", holds,
            f"{cands[pick].policy} {cands[pick].param} qualified ({verdicts[pick][1]}); held-back "
            f"{p.energy_kwh:.1f} kWh, {p.avg_wait_s:.0f} s vs the timer's {t.test.energy_kwh:.1f} kWh, "
            f"{t.test.avg_wait_s:.0f} s: {'dominates' if holds else 'does not dominate'}"))
    return out


def chosen_index(cands: Sequence[PowerCandidate], matches: Sequence[TimerMatch], suspend_time_s: float) -> int:
    """The candidate that becomes the policy file's ``scaling:``: for the site's SuspendTime, the pick when one
    qualified on the tuning part, else that timer."""
    m = next((m for m in matches if m.suspend_time_s == suspend_time_s), None)
    if m is None:
        raise ValueError(f"SuspendTime {suspend_time_s:g} s is not among the timers tried "
                         f"({', '.join(f'{x.suspend_time_s:g}' for x in matches)})")
    return m.pick if m.outcome == "planner" and m.pick is not None else m.timer


@dataclass(frozen=True)
class PowerDrop:
    """A power candidate left out at a rung of the halving (:func:`halve_power`), and why."""

    index: int  # in the candidate list
    policy: str
    param: str
    rung: int  # 0-based
    jobs: int  # the rung's prefix of the tuning part
    energy_kwh: float  # on the rung's prefix
    avg_wait_s: float
    gap: float  # its least gap to a timer on the rung (<= 0: no more energy at no more wait)
    timer_s: float  # that timer's SuspendTime
    best: str  # the candidate nearest to that timer on the rung
    best_gap: float
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class PowerHalving:
    """What the power sweep's halving kept (candidate indices replayed on the whole history, timers included) and
    dropped."""

    kept: list[int]
    dropped: list[PowerDrop]
    rungs: list[tuple[float, int, int]]  # (share, jobs, replays) per rung

    def as_dict(self) -> dict:
        return {"rungs": [{"share": sh, "jobs": j, "replays": n} for sh, j, n in self.rungs], "kept": self.kept,
                "dropped": [d.as_dict() for d in self.dropped],
                "rule": {"keep_share": 1 / _sweep.ETA, "keep_at_least": HALVING_KEEP, "within": _sweep.MARGIN}}


@dataclass
class PowerTuning:
    """The candidates, their scores, the per-timer matches and the chosen setting (:meth:`rows` are the issue's
    JSON ``power`` rows, scored on the held-back part). A candidate the halving dropped has no scores (None)
    unless it was replayed for the report (``report_dropped``); either way it is never picked."""

    candidates: list[PowerCandidate]
    scores: list[Scores | None]
    matches: list[TimerMatch]
    chosen: int
    suspend_time_s: float
    split: Split
    notes: list[str] = field(default_factory=list)
    halving: PowerHalving | None = None
    cpu: dict[str, float] = field(default_factory=dict)  # phase -> CPU s of its replays (every process's)

    @property
    def tune(self) -> list[Part | None]:
        return [s and s.tune for s in self.scores]

    @property
    def test(self) -> list[Part | None]:
        return [s and s.test for s in self.scores]

    @property
    def scaling(self) -> ScalingSpec:
        """The policy file's ``scaling:`` section."""
        return self.candidates[self.chosen].scaling

    def rows(self) -> list[dict]:
        """One row per candidate; a timer's row also says what the tuner keeps for a site running it
        (``outcome``: planner or timer, ``reason``, ``held_back_dominates``); a row of a candidate the halving
        dropped says where (``dropped``), with None metrics when it was not replayed on the whole history."""
        by_timer = {m.timer: m for m in self.matches}
        drops = {d.index: d for d in self.halving.dropped} if self.halving else {}
        rows = []
        for i, c in enumerate(self.candidates):
            s = self.scores[i]
            row = {"policy": c.policy, "param": c.param, "energy_kwh": s and s.test.energy_kwh,
                   "avg_wait_s": s and s.test.avg_wait_s, "chosen": i == self.chosen,
                   "tune": s and {"energy_kwh": s.tune.energy_kwh, "avg_wait_s": s.tune.avg_wait_s,
                                  "blocks": [[b.energy_kwh, b.avg_wait_s] for b in s.blocks]},
                   "scaling": scaling_section(c.scaling)}
            if i in by_timer:
                m = by_timer[i]
                row.update(outcome=m.outcome, reason=m.reason, held_back_dominates=m.held_back_dominates)
            if i in drops:
                row["dropped"] = {"rung": drops[i].rung + 1, "jobs": drops[i].jobs, "reason": drops[i].reason}
            rows.append(row)
        return rows

    def as_dict(self) -> dict:
        blocks = next(len(s.blocks) for s in self.scores if s is not None)
        return {"power": self.rows(), "timers": [asdict(m) for m in self.matches],
                "suspend_time_s": self.suspend_time_s, "scaling": scaling_section(self.scaling),
                "split": self.split.as_dict(), "rule": {"blocks": blocks, "block_wins": BLOCK_WINS},
                "halving": self.halving.as_dict() if self.halving else None, "replay_cpu_s": dict(self.cpu),
                "notes": self.notes}


def scaling_section(spec: ScalingSpec) -> dict:
    """The keys of ``spec`` its scaling choice reads (what a policy file's ``scaling:`` holds)."""
    if spec.name == "idle-timer":
        return {"name": "idle-timer", "suspend_time_s": spec.suspend_time_s}
    if spec.quiet_grace_s is not None:
        return {"name": "planner", "wait_price_w": None, "grace_s": spec.grace_s,
                "quiet_grace_s": spec.quiet_grace_s, "window_s": spec.window_s}
    return {"name": spec.name, "wait_price_w": spec.wait_price_w, "arch": spec.arch, "pid": spec.pid}


# the modules a candidate's run starts from (:func:`_simulate`); the cache key holds the digest of their sources
# and of everything of the package they import (:mod:`.codeversion`), so a cache written by other code is not read
SIM_ROOTS = ("slurm_plugin.tune.power", "slurm_plugin.sim.engine", "slurm_plugin.sim.policy")


def _cache_path(cache: Path, prepared, cand: PowerCandidate, rank_spec: RankingSpec, split: Split,
                backfill: bool, code: str) -> Path:
    import hashlib

    w, m = prepared.workload, prepared.machine
    key = json.dumps([w.name, len(w.jobs), float(w.jobs.submit[-1]), m.name, repr(m.groups), repr(rank_spec),
                      scaling_section(cand.scaling), backfill, split.boundary, BLOCKS, code], sort_keys=True)
    return cache / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.json"


def _simulate(shared, i: int) -> Scores:
    """One candidate's run (module level: the parallel workers call it); read from / written to the cache
    directory when one is given (a run that was stopped resumes with the candidates it had finished)."""
    from ..fsio import write_file_atomic
    from ..sim.engine import Engine
    from ..sim.policy import sim_ranking, sim_scaling

    prepared, cands, rank_spec, split, backfill, cache, code = shared
    path = _cache_path(cache, prepared, cands[i], rank_spec, split, backfill, code) if cache is not None else None
    if path is not None and path.exists():
        d = json.loads(path.read_text())
        return Scores(Part(*d["tune"]), Part(*d["test"]), tuple(Part(*b) for b in d["blocks"]))
    jobs, machine = prepared.workload.jobs, prepared.machine
    rank = sim_ranking(rank_spec, prepared.site, float(machine.cores))
    out = Engine(machine, jobs, rank, backfill=backfill, scaling=sim_scaling(cands[i].scaling, machine, jobs)).run()
    s = run_scores(jobs.submit, out.begin, out.timeline, split)
    if path is not None:
        row = lambda p: [p.energy_kwh, p.avg_wait_s, p.jobs]  # noqa: E731
        write_file_atomic(path, json.dumps({"candidate": cands[i].param, "tune": row(s.tune), "test": row(s.test),
                                            "blocks": [row(b) for b in s.blocks]}))
    return s


def _timed_simulate(shared, i: int) -> tuple[Scores, float]:
    import time

    t0 = time.process_time()
    r = _simulate(shared, i)
    return r, time.process_time() - t0


def prefix_part(submit: np.ndarray, begin: np.ndarray, timeline: dict, cut_time: float) -> Part:
    """A rung's score of one run of a prefix of the tuning part: energy from the first submit to ``cut_time``
    (the submit of the first job after the prefix, as the tuning part's energy ends at the cut), the average
    wait of every prefix job (one never started waits until the run's end)."""
    end = float(timeline["t"][-1]) if timeline["t"] else float(submit.max())
    wait = np.where(np.isnan(begin), end, begin) - submit
    return Part(energy_between(timeline, float(submit[0]), cut_time) / 3.6e6, float(wait.mean()), len(submit))


def _simulate_prefix(shared, i: int) -> tuple[Part, float]:
    """One candidate's run on a rung's prefix (module level, for the workers): (its Part, CPU s)."""
    import time

    from ..sim.engine import Engine
    from ..sim.policy import sim_ranking, sim_scaling

    t0 = time.process_time()
    prepared, cands, rank_spec, cut_time, backfill = shared
    jobs, machine = prepared.workload.jobs, prepared.machine
    rank = sim_ranking(rank_spec, prepared.site, float(machine.cores))
    out = Engine(machine, jobs, rank, backfill=backfill, scaling=sim_scaling(cands[i].scaling, machine, jobs)).run()
    return prefix_part(jobs.submit, out.begin, out.timeline, cut_time), time.process_time() - t0


def dominance_gap(c: Part, t: Part) -> float:
    """How far ``c`` is from no more energy at no more average wait than ``t``: the larger relative excess
    (<= 0: it dominates)."""
    def rel(a: float, b: float) -> float:
        return a / b - 1.0 if b > 0 else 0.0 if a <= b else math.inf

    return max(rel(c.energy_kwh, t.energy_kwh), rel(c.avg_wait_s, t.avg_wait_s))


def power_leaders(cands: Sequence[PowerCandidate], parts: dict[int, Part], keep: int | None = None,
                  eta: int | None = None, margin: float | None = None) -> tuple[set[int], dict[int, tuple]]:
    """A rung's decision (pure): ``parts`` holds the rung's scores of the timers and of the non-timer candidates
    still in. Per timer, the non-timer candidates are ranked by :func:`dominance_gap`; the best
    ``max(keep, ceil(n / eta))`` go on, and every one with gap <= ``margin``. Returns (the non-timer indices
    kept for some timer, {dropped index: (its least gap, that timer's index, the nearest index there, its
    gap)})."""
    keep = HALVING_KEEP if keep is None else keep
    eta = _sweep.ETA if eta is None else eta
    margin = _sweep.MARGIN if margin is None else margin
    timers = [i for i in parts if cands[i].is_timer]
    others = [i for i in parts if not cands[i].is_timer]
    if not others:
        return set(), {}
    n = max(keep, math.ceil(len(others) / eta))
    kept: set[int] = set()
    gaps = {t: {i: dominance_gap(parts[i], parts[t]) for i in others} for t in timers}
    for t in timers:
        ranked = sorted(others, key=lambda i: (gaps[t][i], i))
        kept |= set(ranked[:n]) | {i for i in others if gaps[t][i] <= margin + 1e-12}
    why = {}
    for i in others:
        if i not in kept and timers:
            t = min(timers, key=lambda t: (gaps[t][i], t))
            best = min(others, key=lambda j: (gaps[t][j], j))
            why[i] = (gaps[t][i], t, best, gaps[t][best])
    return kept, why


def halve_power(prepared, split: Split, cands: Sequence[PowerCandidate], rank_spec: RankingSpec, backfill: bool,
                jobs: int | None = None, rungs: tuple[float, ...] | None = None,
                ledger: dict[str, float] | None = None) -> PowerHalving:
    """Successive halving of the power candidates on growing prefixes of the tuning part (module docstring):
    one parallel round per rung; the timers run on every rung and are always kept."""
    from ..sim.parallel import run_all

    rungs = _sweep.RUNGS if rungs is None else rungs
    tune_jobs = tune_part(prepared.workload.jobs, split)
    alive = list(range(len(cands)))
    dropped: list[PowerDrop] = []
    done: list[tuple[float, int, int]] = []
    for r, share in enumerate(rungs):
        cut = split_history(tune_jobs, share)
        pre = replace(prepared, workload=replace(prepared.workload, jobs=tune_part(tune_jobs, cut)))
        got = run_all(_simulate_prefix, (pre, cands, rank_spec, cut.cut_time, backfill), alive, jobs=jobs,
                      desc=f"power halving rung {r + 1}")
        cpu = sum(c for _, c in got)
        phase = f"power: halving rung {r + 1} ({cut.boundary} jobs, {len(alive)} replays)"
        log.info("%s: %.1f CPU s", phase, cpu)
        if ledger is not None:
            ledger[phase] = ledger.get(phase, 0.0) + cpu
        done.append((share, cut.boundary, len(alive)))
        parts = {i: p for i, (p, _) in zip(alive, got)}
        kept, why = power_leaders(cands, parts)
        for i, (gap, t, best, best_gap) in why.items():
            n_others = sum(not cands[j].is_timer for j in alive)
            dropped.append(PowerDrop(
                i, cands[i].policy, cands[i].param, r, cut.boundary, parts[i].energy_kwh, parts[i].avg_wait_s, gap,
                cands[t].scaling.suspend_time_s, f"{cands[best].policy} {cands[best].param}", best_gap,
                f"{gap:+.1%} from no more energy at no more wait than the {cands[t].scaling.suspend_time_s:g} s timer "
                f"(its nearest; {cands[best].policy} {cands[best].param} {best_gap:+.1%}): not among the "
                f"{max(HALVING_KEEP, math.ceil(n_others / _sweep.ETA))} nearest of {n_others} nor within "
                f"{_sweep.MARGIN:.0%} of any timer"))
        alive = [i for i in alive if cands[i].is_timer or i in kept]
    return PowerHalving(alive, dropped, done)


def run_order(cands: Sequence[PowerCandidate], suspend_time_s: float) -> list[int]:
    """Candidate indices in the order they are run: each timer next to its matched timer (the site's SuspendTime
    first, then the longest timers, whose clocks tick least), then the rest; a sweep stopped early (``cache``)
    thus holds whole timer/matched pairs."""
    timers = sorted((c.scaling.suspend_time_s for c in cands if c.is_timer),
                    key=lambda t: (t != suspend_time_s, -t))
    order = []
    for t in timers:
        order += [i for i, c in enumerate(cands) if c.is_timer and c.scaling.suspend_time_s == t]
        order += [i for i, c in enumerate(cands) if c.policy == "matched-timer" and c.param.startswith(f"SuspendTime {_s(t)}:")]
    return order + [i for i in range(len(cands)) if i not in order]


def tune_power(prepared, split: Split, ranking: str | RankingSpec = "fcfs", jobs: int | None = None,
               progress: Callable[[int, int], None] | None = None, suspend_time_s: float | None = None,
               timers: Sequence[float] = TIMER_SUSPEND_S, prices: Sequence[float] = WAIT_PRICES_W,
               backfill: bool = True, matched: bool = True, cache: str | Path | None = None,
               grid: Sequence | None = None, halving: bool | None = None,
               report_dropped: bool = False) -> PowerTuning:
    """Run every candidate on the whole history (``jobs`` processes; ``progress(done, total)`` as runs finish;
    EASY backfill unless ``backfill`` is False) and select. ``suspend_time_s``: the site's timer (default: the
    site file's ``slurm.suspend_time`` when set, else 300 s); it is added to ``timers`` if missing.
    ``ranking``: the ranking every run uses (name or spec; the age floor off for a bare name). ``matched``:
    also run the matched timers (``grid=()``, the earlier API's empty grace grid, means the same as
    ``matched=False``; a non-empty grid is refused: the hand-picked grid is gone). ``cache``: a directory keeping each finished candidate's scores (keyed by
    history, machine, ranking, setting, backfill, split and the code's version), so a stopped evaluation resumes.
    ``halving`` (None: when the tuning part has :data:`.sweep.RACE_MIN_JOBS` jobs or more and not
    ``report_dropped``): successive halving first (:func:`halve_power`), only its survivors and the timers on the
    whole history; ``report_dropped``: the dropped ones too, for their rows only (the evaluation; its rungs then
    save nothing, so it runs there only when asked)."""
    from ..sim.parallel import run_all

    if grid is not None:
        if len(grid):
            raise ValueError("tune_power: the (grace, quiet grace) grid is gone; the matched timers replace it "
                             "(matched=True) or give grid=() / matched=False for none")
        matched = False
    rank_spec = ranking if isinstance(ranking, RankingSpec) else RankingSpec(name=ranking, age_floor=False)
    if suspend_time_s is None:
        site_t = prepared.site.slurm.suspend_time if prepared.site is not None else -1
        suspend_time_s = float(site_t) if site_t > 0 else DEFAULT_SUSPEND_S
    timers = sorted(set(map(float, timers)) | {float(suspend_time_s)})
    archs = {g.arch for g in prepared.machine.groups if not g.gres}
    breakeven = machine_breakeven_s(prepared.machine)
    cands = candidates(len(archs) >= 2, timers, breakeven if matched else None, prices)
    notes = [f"energy break-even of a power cycle: {breakeven:g} s (node-weighted over the groups)"]
    if len(archs) < 2:
        notes.append(f"planner+arch not run: every CPU group is {archs.pop() if archs else '-'}"
                     " (the architecture controller has nothing to move)")
    cpu: dict[str, float] = {}
    if halving is None:  # the evaluation replays the dropped ones anyway: there the rungs would only add cost
        halving = split.tune_jobs >= _sweep.RACE_MIN_JOBS and not report_dropped
    ph = halve_power(prepared, split, cands, rank_spec, backfill, jobs, ledger=cpu) if halving else None
    alive = set(ph.kept) if ph else set(range(len(cands)))
    order = [i for i in run_order(cands, float(suspend_time_s)) if i in alive or report_dropped]
    done = [0]

    def tick(_i, _r) -> None:
        done[0] += 1
        if progress:
            progress(done[0], len(order))

    code = None
    if cache is not None:
        from .codeversion import code_version

        Path(cache).mkdir(parents=True, exist_ok=True)
        code = code_version(SIM_ROOTS)  # once, here: the workers inherit it
    shared = (prepared, cands, rank_spec, split, backfill, Path(cache) if cache is not None else None, code)
    got = run_all(_timed_simulate, shared, order, jobs=jobs, desc="power candidates", on_result=tick)
    phase = f"power: whole history ({len(prepared.workload.jobs)} jobs, {len(order)} replays)"
    cpu[phase] = sum(c for _, c in got)
    log.info("%s: %.1f CPU s", phase, cpu[phase])
    scores: list[Scores | None] = [None] * len(cands)
    for i, (s, _) in zip(order, got):
        scores[i] = s
    matches = match_timers(cands, scores, alive=alive)
    chosen = chosen_index(cands, matches, float(suspend_time_s))
    for m in matches:
        log.info("SuspendTime %g s: %s (%s)", m.suspend_time_s, m.outcome, m.reason)
    return PowerTuning(cands, scores, matches, chosen, float(suspend_time_s), split, notes, ph, cpu)


def evaluate_power(twin, backfill: bool = True, jobs: int | None = None,
                   ranking: str | RankingSpec = "fcfs", **kw) -> list[dict]:
    """The issue's JSON ``power`` rows for ``hetsched tune --evaluate`` (``twin``: :class:`.sweep.Twin`, its
    whole history and split): :meth:`PowerTuning.rows`, each with ``backfill``; ``kw`` as :func:`tune_power`."""
    result = tune_power(twin.whole, twin.split, ranking, jobs=jobs, backfill=backfill, **kw)
    return [{**row, "backfill": backfill} for row in result.rows()]


ROW_KEYS = ("policy", "param", "energy_kwh", "avg_wait_s", "chosen")


def sweep_rows(path: str | Path) -> list[dict]:
    """The issue's ``power`` rows (``ROW_KEYS`` plus ``backfill`` and, on a timer's row, ``outcome`` and
    ``held_back_dominates``) from a ``power_eval`` JSON. Raises ValueError naming the file when it is not one."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
        rows = doc["power"]
        bf = bool(doc.get("backfill", True))
        out = []
        for i, r in enumerate(rows):
            missing = [k for k in ROW_KEYS if k not in r]
            if missing:
                raise ValueError(f"{p}: power[{i}] lacks {', '.join(missing)}")
            out.append({**{k: r[k] for k in ROW_KEYS}, "backfill": bf,
                        **{k: r[k] for k in ("outcome", "held_back_dominates") if k in r}})
        return out
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{p}: not a power_eval result ({err})") from err
