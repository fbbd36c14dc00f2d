"""The DQN as the simulator's :class:`~slurm_plugin.sim.hooks.RankingPolicy`, and the age floor any ranking
can wear.

``DqnRanking.scores(view)`` is :func:`band_scores`: each job's log10 time limit (SJF's order) shifted by its
greedy band b (0..7) times :data:`DELTA` decades, lower = sooner; equal scores keep submit order. The bands
*adjust* SJF rather than replace it: a model that puts every job in one band is exactly SJF, and a band
worth one step moves a job as if its time limit were 10^DELTA (1.78) times shorter or longer.
``AgeFloor(inner, floor_s)`` puts every job that has waited ``floor_s`` or more ahead of all others (oldest
first), which is what the live ranker's age floor does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..heuristics import QueueView, rows_view
from .compiled import Scorer, kernel, scorer
from .features import _AREA, _PROCS, TableFeatures, _backlog, job_features, scarcity_of
from .model import CHUNK, DEFAULT_MODEL, DqnModel, load_model

log = logging.getLogger(__name__)
MODEL_ENV = "HETSCHED_DQN_MODEL"  # `hetsched sim run --policy dqn` reads the model path from here
DELTA = 0.25  # decades of time limit per band


def band_scores(limit: np.ndarray, bands: np.ndarray) -> np.ndarray:
    """log10(max(limit, 1 s)) + DELTA x band: the learned order (lower = sooner). Example: a 1 h job in band 0
    scores 3.56, a 10 min job in band 4 scores 3.78, so the hour-long job goes first."""
    return _log_limit(limit) + DELTA * np.asarray(bands, dtype=float)


def _log_limit(limit: np.ndarray) -> np.ndarray:
    return np.log10(np.maximum(np.asarray(limit, dtype=float), 1.0))


@dataclass
class DqnRanking:
    """Scores = :func:`band_scores` of the Q-network's greedy bands on :func:`.features.job_features`.
    ``total_cores`` is the machine's; ``max_qos`` the top QoS priority (None = the queue's own maximum);
    scarcity comes from ``view.able`` (the engine fills it because ``needs_able``). A view that carries its rows in
    the simulator's job table (``view.rows``/``view.table``) is scored from per-job figures computed once per
    table (:class:`.features.TableFeatures`): the same scores, bit for bit, for a fraction of the work; with
    numba installed such queues are scored by one compiled call (:mod:`.compiled`: the same features and bands,
    Q-values summed in another order than BLAS's)."""

    model: DqnModel
    total_cores: float
    max_qos: float | None = None
    name: str = "dqn"
    static: bool = False
    needs_able: bool = True
    pure: bool = True  # counting calls aside, no side effect: the simulator may skip passes that cannot start a job
    compiled: bool = True  # score table queues with compiled.scorer when numba is installed (same bands)
    calls: int = field(default=0, repr=False)
    _cache: tuple | None = field(default=None, repr=False)  # (table, its TableFeatures, log10 limits)
    _compiled: Scorer | None = field(default=None, repr=False)  # compiled.scorer of the cached table, or None

    def features(self, view: QueueView) -> np.ndarray:
        if view.rows is not None and view.table is not None:
            return self._table(view.table)[1](view.rows, view.now)
        return view_features(view, self.total_cores, self.max_qos)

    def scores(self, view: QueueView) -> np.ndarray:
        if view.rows is not None and view.table is not None:
            return self.scores_rows(view.rows, view.table, view.now)
        self.calls += 1
        return band_scores(view.limit, self.model.bands(self.features(view)))

    def scores_rows(self, rows: np.ndarray, table: QueueView, now: float) -> np.ndarray:
        """``scores`` of the queue made of ``table``'s jobs ``rows`` (in that order) at ``now``: what the
        simulator asks, without building the view's per-job arrays (the engine calls this when it exists)."""
        self.calls += 1
        _, feats, log_limit = self._table(table)
        m = self.model
        if not m.gates_whole_queues:
            return log_limit[rows] + DELTA * m.bands(feats(rows, now))
        if m.gates_all(feats.backlog(rows)):  # every band 0: the scores are the log10 limits (+ 0.0)
            return log_limit[rows]
        if self._compiled is not None:  # the sums as feats(rows, now) takes them
            procs_sum, area_sum = feats.packed[_PROCS:_AREA + 1, rows].sum(axis=1).tolist()
            return self._compiled.scores(rows, now, procs_sum, area_sum)
        return log_limit[rows] + DELTA * m.greedy(feats(rows, now))

    def light_order(self, table: QueueView) -> LightOrder | None:
        """The order of the queues of ``table``'s jobs that the model's backlog gate holds whole (every score
        is then the job's log10 limit, see :meth:`scores_rows`), as a fixed rank per job, so a simulator can
        keep such queues sorted instead of scoring them; None when the model has no gate, gates only some jobs
        of a queue, or the queue's area sum is not exact in every order (areas not whole numbers, or their total
        2**53 or more). The gate is decided from the queue's area sum (:meth:`LightOrder.holds`)."""
        m = self.model
        if m.meta.get("backlog_gate") is None or not m.gates_whole_queues:
            return None
        _, feats, log_limit = self._table(table)
        area, procs = feats.area, feats.procs
        total = float(area.sum())
        if (len(area) == 0 or not np.all(area == np.floor(area)) or not np.all(procs == np.floor(procs))
                or max(total, float(procs.sum())) >= 2.0 ** 53):
            return None
        c = feats.c

        def gated(area_sum: float) -> bool:  # what scores_rows decides: gates_all of the queue's backlog feature
            return m.gates_all(_backlog(area_sum, c))

        if not gated(0.0):
            return None  # the gate never holds
        if gated(total):
            top = total  # every queue is held
        else:  # the largest whole area sum held (the feature grows with the sum)
            lo, hi = 0.0, total
            while hi - lo > 1.0:
                mid = float(np.floor((lo + hi) / 2))
                lo, hi = (mid, hi) if gated(mid) else (lo, mid)
            top = lo
        # sums within a millionth of the threshold ask ``gated`` itself (libm need not be monotone to the last bit)
        order = np.argsort(log_limit, kind="stable")  # scores_rows's stable sort of rows by log10 limit
        rank_of = np.empty(len(area), dtype=np.int64)
        rank_of[order] = np.arange(len(area))
        return LightOrder(rank_of.tolist(), order.tolist(), area.tolist(), procs.tolist(), top * (1 - 1e-6) - 1.0,
                          top * (1 + 1e-6) + 1.0, gated, self._ungated_scores,
                          None if self._compiled is None else self._ungated_order)

    def _ungated_order(self, rows: list[int], now: float, procs_sum: float, area_sum: float) -> list[int]:
        """``rows`` (ascending) stably sorted by :meth:`_ungated_scores`, in one compiled call."""
        self.calls += 1
        return self._compiled.order(rows, now, procs_sum, area_sum)

    def _ungated_scores(self, rows: np.ndarray, now: float, procs_sum: float, area_sum: float) -> np.ndarray:
        """:meth:`scores_rows` of a queue the gate does not hold (``rows`` ascending), given its exact sums: the
        same features, and :meth:`DqnModel.greedy`'s operations inlined for queues of one chunk."""
        self.calls += 1
        if self._compiled is not None:
            return self._compiled.scores(rows, now, procs_sum, area_sum)
        _, feats, log_limit = self._cache
        x = feats(rows, now, (procs_sum, area_sum))
        m = self.model
        if len(x) > CHUNK or m.meta.get("margin", 0.0) > 0:
            return log_limit[rows] + DELTA * m.greedy(x)
        if len(m.weights) == 3:  # the shipped shape, unrolled (the loop below, same operations)
            (w0, w1, w2), (b0, b1, b2) = m.weights, m.biases
            h = x @ w0
            h += b0
            np.maximum(h, 0.0, out=h)
            h = h @ w1
            h += b1
            np.maximum(h, 0.0, out=h)
            h = h @ w2
            h += b2
            return log_limit[rows] + DELTA * h.argmax(axis=1)
        h, last = x, len(m.weights) - 1
        for i, (w, b) in enumerate(zip(m.weights, m.biases)):  # DqnModel._forward
            h = h @ w
            h += b
            if i < last:
                np.maximum(h, 0.0, out=h)
        return log_limit[rows] + DELTA * h.argmax(axis=1)

    def _table(self, table: QueueView) -> tuple:
        if self._cache is None or self._cache[0] is not table:
            scarce = None if table.able is None else scarcity_of(table.able, self.total_cores)
            self._cache = (table, TableFeatures(table.submit, table.limit, table.procs, table.qos, self.total_cores,
                                                scarce, self.max_qos), _log_limit(table.limit))
            self._compiled = scorer(self._cache[1], self._cache[2], self.model, DELTA) if self.compiled else None
        return self._cache


@dataclass(frozen=True)
class LightOrder:
    """:meth:`DqnRanking.light_order`: ``rank_of[j]`` is job j's place in the order of queues the gate holds
    (by log10 limit, then row: what :meth:`DqnRanking.scores_rows` and the engine's stable sort give), ``job_of``
    its inverse; ``area[j]`` and ``procs[j]`` the job's core-seconds and cores as the features count them (whole
    numbers, so a queue's sums are the same in any order). A queue is held when its area sum is at most ``low``,
    not when above ``high``, else as ``gated(sum)`` says (see :meth:`holds`). A queue not held is scored by
    ``scores(rows, now, procs_sum, area_sum)`` (rows ascending): :meth:`DqnRanking.scores_rows`'s numbers;
    ``order`` (optional, same arguments with rows as a list) returns the rows stably sorted by those scores."""

    rank_of: list[int]
    job_of: list[int]
    area: list[float]
    procs: list[float]
    low: float
    high: float
    gated: Callable[[float], bool]
    scores: Callable[[np.ndarray, float, float, float], np.ndarray]
    order: Callable[[list[int], float, float, float], list[int]] | None = None

    def holds(self, area_sum: float) -> bool:
        """Whether the gate holds a queue whose jobs' ``area`` sum to ``area_sum`` (then every job is in band 0
        and the queue's order is its jobs' ranks)."""
        if area_sum <= self.low:
            return True
        return area_sum <= self.high and self.gated(area_sum)


def view_features(view: QueueView, total_cores: float, max_qos: float | None = None) -> np.ndarray:
    """:func:`.features.job_features` of a simulator queue view (scarcity from ``view.able`` when known)."""
    scarce = None if view.able is None else scarcity_of(view.able, total_cores)
    return job_features(view.submit, view.limit, view.procs, view.qos, view.now, total_cores, scarce, max_qos)


@dataclass
class AgeFloor:
    """``inner``'s order, except that jobs waiting ``floor_s`` or more go first, oldest first."""

    inner: object
    floor_s: float
    static: bool = False

    @property
    def name(self) -> str:
        return f"{self.inner.name}+floor{self.floor_s / 3600:g}h"

    @property
    def needs_able(self) -> bool:
        """As ``inner``'s: the engine fills ``view.able`` (the DQN's scarcity) only when asked."""
        return bool(getattr(self.inner, "needs_able", False))

    @property
    def pure(self) -> bool:
        """As ``inner``'s: the floor adds no side effect, so the simulator may skip passes that cannot start a job."""
        return bool(getattr(self.inner, "pure", False))

    def scores(self, view: QueueView) -> np.ndarray:
        return self._floored(self.inner.scores(view), view.now - view.submit)

    def scores_rows(self, rows: np.ndarray, table: QueueView, now: float) -> np.ndarray:
        """:meth:`scores` of the view of ``table``'s jobs ``rows`` at ``now`` (the simulator's call), through
        ``inner.scores_rows`` when it has one (its compiled path), else through that view."""
        by_rows = getattr(self.inner, "scores_rows", None)
        if by_rows is None:
            return self.scores(rows_view(table, rows, now))
        return self._floored(by_rows(rows, table, now), now - table.submit[rows])

    def _floored(self, scores, waits: np.ndarray) -> np.ndarray:
        """``scores`` with -inf (first) for the jobs waiting ``floor_s`` or more."""
        return np.where(waits >= self.floor_s, -np.inf, np.asarray(scores, dtype=float))


def dqn_ranking(site=None, total_procs: float = 1.0, model_path: str | None = None) -> DqnRanking:
    """Factory for the simulator's registry: the model at ``model_path``, else ``$HETSCHED_DQN_MODEL``, else
    the shipped default; QoS scaled by the site's top tier when a site is given."""
    path = model_path or os.environ.get(MODEL_ENV) or DEFAULT_MODEL
    max_qos = None
    if site is not None:
        max_qos = float(max([q.priority for q in site.policy.qos_tiers] or [0])) or None
    ranking = DqnRanking(load_model(path), float(total_procs), max_qos)
    if ranking.compiled:
        kernel()  # load (or compile) the compiled scorer now, not inside the first simulation's loop
    return ranking
