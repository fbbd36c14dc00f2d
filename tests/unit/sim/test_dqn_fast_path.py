"""The DQN in the count-based loop (:mod:`slurm_plugin.sim.exclusive`): while the model's backlog gate holds the
whole queue the loop walks a kept order (:meth:`DqnRanking.light_order`) instead of scoring, and otherwise scores
the queue from sums it keeps (:meth:`DqnRanking._ungated_scores`). Checked against scoring from scratch
(:func:`job_features` -> :meth:`DqnModel.bands` -> :func:`band_scores` on the queue's own arrays):

* every queue the loop scores, and the gate's decision on every pass, equal the from-scratch ones, number for
  number (a pass whose gate or scores differ fails, whether or not the schedule moves);
* the gate's decision from a queue's area sum (:meth:`LightOrder.holds`) equals the from-scratch one at every sum
  around its threshold, and the kept order equals the from-scratch order of held queues;
* the schedule equals the engine's general loop with a ranking that scores every pass from scratch.
"""

import os
from pathlib import Path

import numpy as np
import pytest

from slurm_plugin.rank import QueueView
from slurm_plugin.rank.dqn.features import _backlog
from slurm_plugin.rank.dqn.model import DEFAULT_MODEL, load_model
from slurm_plugin.rank.dqn.policy import DqnRanking, LightOrder, band_scores, view_features
from slurm_plugin.sim import exclusive
from slurm_plugin.sim.engine import Engine
from slurm_plugin.sim.machine import homogeneous
from slurm_plugin.workload.jobs import JobTable

from .test_exclusive import random_jobs

SWF = Path(os.environ.get("HETSCHED_SHARED_WORKLOADS",
                          Path(__file__).resolve().parents[3].parent / "shared" / "workloads")) / "swf"


def whole_limits(seed: int, n: int = 400, nodes: int = 16) -> JobTable:
    """:func:`random_jobs` with whole-second limits (the kept order needs whole core-seconds)."""
    js = random_jobs(seed, n, nodes)
    js.limit[:] = np.ceil(js.limit)
    return js


def straight(model, total: float, table: QueueView, rows: np.ndarray, now: float) -> np.ndarray:
    """The DQN's scores of the queue ``rows`` at ``now`` from scratch: the queue's own arrays, no cache."""
    view = QueueView(table.submit[rows], table.limit[rows], table.procs[rows], table.qos[rows], now,
                     None if table.able is None else table.able[rows])
    return band_scores(view.limit, model.bands(view_features(view, total)))


class Plain:
    """The DQN scored from scratch on every pass (the general loop's reference)."""

    name, static, needs_able, pure = "dqn-plain", False, True, True

    def __init__(self, model, total: float):
        self.model, self.total = model, total

    def scores(self, view: QueueView) -> np.ndarray:
        return band_scores(view.limit, self.model.bands(view_features(view, self.total)))


class Checked(DqnRanking):
    """The shipped DQN that checks every queue the loop scores against :func:`straight`. With ``force`` its kept
    order never holds, so every pass that needs an order is scored here, and the gate's decision (from the sums
    the loop keeps) is checked too: a held queue must score as its log10 limits."""

    force = False
    scored = held = 0

    def light_order(self, table):
        self.real = super().light_order(table)
        assert self.real is not None
        if not self.force:
            return self.real
        r = self.real
        return LightOrder(r.rank_of, r.job_of, r.area, r.procs, -np.inf, -np.inf, r.gated, self._ungated_scores)

    def _ungated_scores(self, rows, now, procs_sum, area_sum):
        table = self._cache[0]
        assert (np.diff(rows) > 0).all()
        assert procs_sum == table.procs[rows].sum() and area_sum == self._cache[1].area[rows].sum()
        if self.real.holds(area_sum):
            self.held += 1
            got = self._cache[2][rows]
        else:
            got = super()._ungated_scores(rows, now, procs_sum, area_sum)
        self.scored += 1
        np.testing.assert_array_equal(got, straight(self.model, self.total_cores, table, rows, now))
        return got

    def _ungated_order(self, rows, now, procs_sum, area_sum):
        """The compiled order (numba installed) of a queue the loop scores: the checked scores' stable order."""
        got = super()._ungated_order(rows, now, procs_sum, area_sum)
        arr = np.array(rows, dtype=np.int64)
        assert got == arr[self._ungated_scores(arr, now, procs_sum, area_sum).argsort(kind="stable")].tolist()
        return got


def _fast(m, js, force: bool, **kw) -> tuple:
    rank = Checked(load_model(DEFAULT_MODEL), float(m.cores))
    rank.force = force
    e = Engine(m, js, rank, **kw)
    assert exclusive.eligible(e)
    return e.run(), rank


def _general(m, js, **kw):
    e = Engine(m, js, Plain(load_model(DEFAULT_MODEL), float(m.cores)), observer=lambda e, t: None, **kw)
    assert not exclusive.eligible(e)
    return e.run()


@pytest.mark.parametrize("seed", [0, 1, 3, 5])  # seeds whose queues both pass and fail the gate when scored
@pytest.mark.parametrize("backfill", [True, False])
def test_fast_dqn_scores_and_schedule_equal_scoring_from_scratch(seed, backfill):
    m = homogeneous(16, 1)
    js = whole_limits(seed)
    ref = _general(m, js, backfill=backfill)
    forced, f = _fast(m, js, True, backfill=backfill)
    assert f.scored > 0 and 0 < f.held < f.scored  # both kinds of queue were checked
    out, r = _fast(m, js, False, backfill=backfill)
    assert 0 < r.scored < f.scored  # the kept order served some passes
    for got in (forced, out):
        np.testing.assert_array_equal(got.begin, ref.begin)
        assert got.energy_j == ref.energy_j and got.timeline == ref.timeline


@pytest.mark.skipif(not (SWF / "lublin_256.swf").exists(), reason="shared traces absent")
def test_fast_dqn_on_lublin_prefix_equals_scoring_from_scratch():
    from slurm_plugin.workload import read_swf
    w = read_swf(SWF / "lublin_256.swf")
    js = w.jobs.take(np.arange(2000))
    m = homogeneous(w.machine[0], 1)
    ref = _general(m, js)
    out, r = _fast(m, js, False)
    assert r.scored > 0
    np.testing.assert_array_equal(out.begin, ref.begin)


def test_gate_from_area_sums_equals_the_features_gate():
    """``holds(s)`` against ``gates_all`` of the backlog feature, at every whole sum near the threshold and at
    sums spread over the whole range; the kept order against the stable sort of from-scratch scores."""
    m = homogeneous(16, 1)
    js = whole_limits(0)
    rank = DqnRanking(load_model(DEFAULT_MODEL), float(m.cores))
    e = Engine(m, js, rank)
    lo = rank.light_order(e._table)
    assert lo is not None and 0 < lo.low < lo.high
    model = rank.model
    c = float(m.cores)
    top = int(lo.high)
    near = np.arange(max(0, int(lo.low) - 2000), top + 2000, dtype=float)
    spread = np.unique(np.geomspace(1.0, 1e12, 5000).round())
    for s in np.concatenate([near, spread, [0.0]]):
        assert lo.holds(float(s)) == model.gates_all(_backlog(float(s), c)), s
    held = [s for s in near if lo.holds(float(s))]
    assert held and len(held) < len(near)  # the threshold lies inside the range checked
    rng = np.random.default_rng(1)
    table = e._table
    area = rank._cache[1].area
    for _ in range(200):
        rows = np.sort(rng.choice(len(js), rng.integers(1, 30), replace=False))
        scores = straight(model, c, table, rows, float(js.submit[rows].max()) + 10.0)
        if lo.holds(float(area[rows].sum())):
            kept = [lo.job_of[x] for x in sorted(lo.rank_of[j] for j in rows)]
            assert kept == rows[np.argsort(scores, kind="stable")].tolist()


def _plan(k: int, free: int, ends: list) -> tuple[float, int]:
    """:func:`exclusive.run`'s plan of a head of ``k`` nodes: (time, idle nodes held), ``ends`` sorted (end, nodes)."""
    need, busy = k - free, 0
    for i, (when, nodes) in enumerate(ends):
        busy += nodes
        if busy >= need:
            for when2, nodes2 in ends[i + 1:]:
                if when2 != when:
                    break
                busy += nodes2
            return when, max(0, k - busy)
    raise AssertionError("never fits")


def _pass(order, sizes, limits, free: int, ends: list, t: float) -> set:
    """The jobs one EASY pass starts in ``order`` (exclusive.run's walk and backfill, written out plainly)."""
    ends, started = sorted(ends), set()
    for pos, j in enumerate(order):
        if free <= 0:
            break
        if sizes[j] <= free:
            free -= sizes[j]
            ends = sorted(ends + [(t + limits[j], sizes[j])])
            started.add(j)
            continue
        when, held = _plan(sizes[j], free, ends)
        for y in order[pos + 1:]:
            k = sizes[y]
            if k > free:
                continue
            if t + limits[y] <= when:
                held = held - k if held > k else 0
            elif k > free - held:
                continue
            free -= k
            ends = sorted(ends + [(t + limits[y], k)])
            started.add(y)
            if free <= 0:
                break
        break
    return started


def test_starts_in_any_order_holds_for_every_order():
    """``exclusive._starts_in_any_order`` against every order of small random queues: when it names the jobs that
    fit, every order starts exactly them; and it names them (one or several) on some queues."""
    import itertools
    rng = np.random.default_rng(7)
    named = {1: 0, 2: 0}
    t = 1000.0
    for _ in range(3000):
        nodes = int(rng.integers(4, 17))
        running = [(t + float(rng.integers(1, 40)) * 60, int(rng.integers(1, 5))) for _ in range(rng.integers(1, 5))]
        busy = sum(k for _, k in running)
        if busy >= nodes:
            continue
        free = nodes - busy
        q = int(rng.integers(2, 6))
        sizes = [int(rng.integers(1, nodes + 1)) for _ in range(q)]
        limits = [float(rng.integers(1, 60)) * 60 for _ in range(q)]
        if min(sizes) > free or max(sizes) <= free:
            continue
        ends = sorted(running)
        rows = list(range(q))
        got = exclusive._starts_in_any_order(rows, sizes, free, t, limits, lambda k: _plan(k, free, ends), True)
        if got is None:
            continue
        named[min(len(got), 2)] += 1
        for order in itertools.permutations(rows):
            assert _pass(order, sizes, limits, free, ends, t) == set(got), (sizes, limits, free, ends, order)
    assert named[1] > 20 and named[2] > 20, named


@pytest.mark.parametrize("seed", [0, 1, 3, 5])
def test_order_free_passes_taken_and_schedule_unchanged(seed, monkeypatch):
    """The count-based loop takes passes whose starts no order changes without scoring them (some, on these queues),
    and its schedule equals the general loop's, scoring every pass from scratch."""
    taken = []
    real = exclusive._starts_in_any_order

    def counted(*a):
        got = real(*a)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(exclusive, "_starts_in_any_order", counted)
    m = homogeneous(16, 1)
    js = whole_limits(seed)
    ref = _general(m, js)
    out, _ = _fast(m, js, False)
    assert any(taken)
    np.testing.assert_array_equal(out.begin, ref.begin)
    assert out.energy_j == ref.energy_j and out.timeline == ref.timeline
