"""The simulator's extension points, one small Protocol per decision, all registered in this module.

- :class:`RankingPolicy`: which pending job first (the DQN ranking plugs in here).
- :class:`PlacementPolicy`: which of the fitting nodes a starting job gets (MILP/greedy packing).
- :class:`ScalingPolicy`: which idle nodes to power down or up (elastic scaling).
- :class:`PackingPolicy`: which node classes pending flexible jobs may use (the daemon's packing step).

Policies are pure: they read arrays and return arrays/decisions; only the engine changes state. Build one by
name with :func:`ranking`, :func:`placement`, :func:`scaling`; add your own with ``register_*``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..rank import HEURISTICS, Multifactor, QueueView, Weighted
from ..rank.compiled import has_rows_kernel, rows_scorer
from ..rank.heuristics import rows_view
from .views import PackView, PowerView


class RankingPolicy(Protocol):
    """Orders the queue. ``scores(view)`` returns one float per pending job; lower = sooner (ties by submit
    time, then job id). ``static`` means a job's score never changes while it waits, so the engine may cache
    the order; an optional ``pure = True`` says ``scores`` has no side effect (no log of what it was shown), so
    the engine may skip it when no job could start anyway; an optional ``scores_rows(rows, table, now)`` (the
    same scores for the view of ``table``'s jobs ``rows`` at ``now``) is called instead of ``scores`` by the
    engine, which then builds no per-pass view. Example: FCFS returns ``view.submit``."""

    name: str
    static: bool

    def scores(self, view: QueueView) -> np.ndarray: ...


class PlacementPolicy(Protocol):
    """Chooses nodes. ``choose(candidates, ready_now, need)`` gets the indices of every node that can hold one
    per-node share of the job (in node-group order), a same-length bool array telling which are powered on
    now, and the node count ``need`` (<= len(candidates)); returns exactly ``need`` of the candidates."""

    name: str

    def choose(self, candidates: np.ndarray, ready_now: np.ndarray, need: int) -> np.ndarray: ...


class PackingPolicy(Protocol):
    """Narrows where pending jobs may run. ``decide(view)`` returns job row -> new request (a
    :class:`~slurm_plugin.sim.cluster.Req` whose options are a subset of the job's original ones), as
    ``scontrol update jobid=.. partition=.. features=..`` would; asked every ``interval_s`` simulated seconds."""

    name: str
    interval_s: float

    def decide(self, view: PackView) -> dict: ...


class ScalingPolicy(Protocol):
    """Powers nodes. ``decide(view)`` returns (nodes to power down, nodes to power up) as index arrays; only
    idle powered-on nodes can be powered down, only off nodes up. ``interval_s`` is how often the engine asks
    (None = never: every node stays on)."""

    name: str
    interval_s: float | None

    def decide(self, view: PowerView) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass(frozen=True)
class ScoreRanking:
    """A ranking from a vectorised scorer (the heuristics of :mod:`slurm_plugin.rank`)."""

    name: str
    scorer: Callable[[QueueView], np.ndarray]
    static: bool
    pure: bool = True

    def scores(self, view: QueueView) -> np.ndarray:
        return self.scorer(view)


@dataclass(frozen=True)
class RowsScoreRanking(ScoreRanking):
    """A :class:`ScoreRanking` of a heuristic with a compiled counterpart
    (:func:`slurm_plugin.rank.compiled.rows_scorer`): the simulator asks it by job rows and gets the same numbers in
    one call. The kernels load on the first such call (a live ranker, which only calls ``scores``, never imports
    numba); without them the rows' view is scored as the engine would build it."""

    _rows: list = field(default_factory=list, compare=False, repr=False)  # [the compiled scorer or None], once

    def scores_rows(self, rows: np.ndarray, table: QueueView, now: float) -> np.ndarray:
        if not self._rows:
            self._rows.append(rows_scorer(self.name, self.scorer))
        f = self._rows[0]
        return self.scorer(rows_view(table, rows, now)) if f is None else f(rows, table, now)


def _score_ranking(name: str, scorer: Callable[[QueueView], np.ndarray], static: bool) -> ScoreRanking:
    """The ranking of a heuristic scorer; a dynamic one with a compiled counterpart also scores by job rows."""
    if static or not has_rows_kernel(scorer):
        return ScoreRanking(name, scorer, static)
    return RowsScoreRanking(name, scorer, static)


@dataclass(frozen=True)
class FirstFit:
    """Slurm-like: nodes already on first, then in node-group and node order (no boot if avoidable)."""

    name: str = "first-fit"

    def choose(self, candidates: np.ndarray, ready_now: np.ndarray, need: int) -> np.ndarray:
        if ready_now.all():
            return candidates[:need]
        order = np.argsort(~ready_now, kind="stable")
        return candidates[order[:need]]


@dataclass(frozen=True)
class AlwaysOn:
    """No power saving: every node stays on (Slurm with SuspendTime=NONE)."""

    name: str = "always-on"
    interval_s: float | None = None

    def decide(self, view: PowerView) -> tuple[np.ndarray, np.ndarray]:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty


@dataclass(frozen=True)
class IdleSuspend:
    """Slurm's SuspendTime: power a node down after ``suspend_time_s`` idle; jobs that land on off nodes boot
    them (the engine does that, so this never powers up)."""

    suspend_time_s: float = 600.0
    name: str = "idle-suspend"

    @property
    def interval_s(self) -> float:
        return max(self.suspend_time_s / 4, 1.0)

    def decide(self, view: PowerView) -> tuple[np.ndarray, np.ndarray]:
        return np.flatnonzero(view.idle_for >= self.suspend_time_s), np.empty(0, dtype=np.int64)


def _multifactor(site, total_procs: float) -> ScoreRanking:
    kw: dict = dict(total_procs=total_procs)
    if site is not None:
        s = site.slurm
        from ..workload.sacct import parse_timelimit
        kw.update(weight_age=s.priority_weight_age, weight_size=s.priority_weight_job_size,
                  max_age_s=parse_timelimit(s.priority_max_age) or 7 * 86400.0,
                  max_qos=max([q.priority for q in site.policy.qos_tiers] or [1]) or 1,
                  total_nodes=float(site.node_count()))
    return _score_ranking("multifactor", Multifactor(**kw), static=False)


def _weighted(site, total_procs: float, **weights) -> ScoreRanking:
    """The tuner's parametric family (:class:`~slurm_plugin.rank.heuristics.Weighted`; default weights: SJF)."""
    w = Weighted(**weights)
    return ScoreRanking("weighted", w, static=not w.w_age)


# name -> factory(site or None, total procs of the machine, **parameters): every ranking, in one place.
RANKINGS: dict[str, Callable[..., RankingPolicy]] = {
    name: (lambda site, total, _n=name, _f=fn, _s=static: _score_ranking(_n, _f, _s))
    for name, (fn, static) in HEURISTICS.items()
}
RANKINGS["multifactor"] = _multifactor
RANKINGS["weighted"] = _weighted
# the learned ranking, imported on use (numpy only; model from $HETSCHED_DQN_MODEL or the shipped default)
RANKINGS["dqn"] = lambda site, total: importlib.import_module("slurm_plugin.rank.dqn").dqn_ranking(site, total)
PLACEMENTS: dict[str, Callable[[], PlacementPolicy]] = {"first-fit": FirstFit}
SCALINGS: dict[str, Callable[..., ScalingPolicy]] = {"always-on": AlwaysOn, "idle-suspend": IdleSuspend}
# name -> factory(site, machine, jobs, **kw); "off" = Slurm's own placement only
PACKINGS: dict[str, Callable[..., PackingPolicy | None]] = {
    "off": lambda site, machine, jobs, **kw: None,
    "milp": lambda site, machine, jobs, **kw: importlib.import_module("slurm_plugin.sim.packing").MilpPacking(
        site, machine, jobs, **kw),
}


def _get(table: dict, kind: str, name: str):
    if name not in table:
        raise ValueError(f"unknown {kind} policy '{name}' (valid: {', '.join(sorted(table))})")
    return table[name]


def ranking(name: str, site=None, total_procs: float = 1.0, **params) -> RankingPolicy:
    """The ranking ``name``; ``params`` (only the parametric ``weighted`` takes any) go to its factory."""
    factory = _get(RANKINGS, "ranking", name)
    return factory(site, total_procs, **params) if params else factory(site, total_procs)


def placement(name: str = "first-fit") -> PlacementPolicy:
    return _get(PLACEMENTS, "placement", name)()


def scaling(name: str = "always-on", **kw) -> ScalingPolicy:
    return _get(SCALINGS, "scaling", name)(**kw)


def packing(name: str, site, machine, jobs, **kw) -> PackingPolicy | None:
    if name != "off" and site is None:
        raise ValueError(f"packing '{name}' needs a site (--site): node classes and speed factors come from it")
    return _get(PACKINGS, "packing", name)(site, machine, jobs, **kw)


def register_ranking(name: str, factory: Callable[..., RankingPolicy]) -> None:
    RANKINGS[name] = factory


def register_placement(name: str, factory: Callable[[], PlacementPolicy]) -> None:
    PLACEMENTS[name] = factory


def register_scaling(name: str, factory: Callable[..., ScalingPolicy]) -> None:
    SCALINGS[name] = factory
