"""The count-based loop (:mod:`slurm_plugin.sim.exclusive`) against the engine's general loop, and the reference
EASY loop against both: the same start time for every job, the same energy, cost and timeline."""

import numpy as np
import pytest

from slurm_plugin.sim import exclusive
from slurm_plugin.sim.engine import Engine
from slurm_plugin.sim.hooks import ranking
from slurm_plugin.sim.machine import homogeneous
from slurm_plugin.sim.reference import easy_fcfs
from slurm_plugin.workload.jobs import JobTable


def random_jobs(seed: int, n: int, nodes: int) -> JobTable:
    """Bursty arrivals (many at one instant), run times 0..., limits below, at and above run times, some 0."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.choice([0, 0, 1, 5, 60, 600], n)).astype(float)
    run = rng.choice([0, 1, 10, 100, 1000, 5000], n).astype(float) * rng.integers(1, 4, n)
    limit = np.where(rng.random(n) < 0.2, run, run * rng.choice([0.5, 1, 2, 10], n))
    limit[rng.random(n) < 0.03] = 0.0
    size = np.minimum(rng.choice([1, 1, 2, 3, 4, 8, nodes // 2, nodes], n), nodes)
    return JobTable.build(dict(submit=submit, run=run, limit=limit, nodes=size, cores=np.ones(n)))


def both(m, js, policy, **kw):
    fast = Engine(m, js, ranking(policy, total_procs=float(m.cores)), **kw)
    assert exclusive.eligible(fast)
    a = fast.run()
    # an observer turns the count-based loop off: the general loop, per-node arrays
    general = Engine(m, js, ranking(policy, total_procs=float(m.cores)), observer=lambda e, t: None, **kw)
    assert not exclusive.eligible(general)
    return a, general.run()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("policy", ["fcfs", "sjf", "wfp3", "multifactor", "dqn"])
@pytest.mark.parametrize("backfill,bf_max", [(False, 500), (True, 500), (True, 2)])
def test_count_loop_matches_general_loop(seed, policy, backfill, bf_max):
    m = homogeneous(16, 1)
    js = random_jobs(seed, 300, 16)
    a, b = both(m, js, policy, backfill=backfill, bf_max_job_test=bf_max)
    np.testing.assert_array_equal(a.begin, b.begin)
    np.testing.assert_array_equal(a.end, b.end)
    assert (a.energy_j, a.cost, a.events, a.timeouts) == (b.energy_j, b.cost, b.events, b.timeouts)
    assert a.timeline == b.timeline
    np.testing.assert_array_equal(a.group_core_s, b.group_core_s)


@pytest.mark.parametrize("policy", ["wfp3", "dqn"])
def test_count_loop_with_fractional_times_matches(policy):
    """Run times in fractions of a second: the loop's sums are not exact in every order, so passes where every
    queued job fits are ranked as usual (only passes where none fits skip the ranking)."""
    m = homogeneous(16, 1)
    js = random_jobs(3, 300, 16)
    js.run[:] = js.run * 1.37
    a, b = both(m, js, policy, backfill=True)
    np.testing.assert_array_equal(a.begin, b.begin)
    assert a.energy_j == b.energy_j and a.timeline == b.timeline


def test_count_loop_on_multicore_nodes():
    m = homogeneous(8, 4)
    js = random_jobs(7, 200, 8)
    js.cores[:] = 4  # whole nodes of 4 cores
    a, b = both(m, js, "fcfs", backfill=True)
    np.testing.assert_array_equal(a.begin, b.begin)
    assert a.timeline == b.timeline


def test_partial_node_jobs_take_the_general_loop():
    js = random_jobs(1, 20, 4)
    assert not exclusive.eligible(Engine(homogeneous(4, 2), js, ranking("fcfs")))  # 1 of 2 cores: shared nodes


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("window", [None, 3])
def test_reference_easy_matches_engine(seed, window):
    js = random_jobs(seed, 400, 32)
    out = Engine(homogeneous(32, 1), js, ranking("fcfs"), backfill=True,
                 bf_max_job_test=10**9 if window is None else window).run()
    ref = easy_fcfs(32, js.submit, js.run, js.limit, js.nodes, bf_window=window)
    np.testing.assert_array_equal(out.begin, ref.begin)


def test_reference_backfills_only_without_delaying_the_head():
    # 4 nodes: job 0 holds 2 until 100; job 1 (4 nodes) waits, shadow 100, extra 0; job 2 (2 nodes, limit 50)
    # ends by the shadow time and backfills; job 3 (1 node, limit 200) would delay job 1 and waits
    ref = easy_fcfs(4, [0, 1, 2, 3], [100, 50, 50, 200], [100, 50, 50, 200], [2, 4, 2, 1])
    assert ref.begin.tolist() == [0, 100, 2, 150]


def test_a_pure_ranking_is_not_asked_when_no_node_is_idle():
    calls = {}

    class Counting:
        name, static = "counting-fcfs", False

        def __init__(self, pure):
            self.pure, self.n = pure, 0

        def scores(self, view):
            self.n += 1
            return view.submit.astype(float)

    js = random_jobs(3, 300, 16)
    outs = {}
    for pure in (False, True):
        r = Counting(pure)
        outs[pure] = Engine(homogeneous(16, 1), js, r, backfill=True).run()
        calls[pure] = r.n
    np.testing.assert_array_equal(outs[True].begin, outs[False].begin)
    assert 0 < calls[True] < calls[False]  # a logging ranking (pure False) still sees every pass


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("policy", ["fcfs", "sjf", "dqn"])
def test_timeline_rebuilt_after_the_loop_equals_the_recorded_one(seed, policy, monkeypatch):
    """Whole-number watts: the loop keeps no timeline and _timeline rebuilds it from the start times (zero run
    times, bursts and jobs that end at another's start included); it must equal, value and type, the one the loop
    records when it keeps it."""
    m = homogeneous(16, 1)
    js = random_jobs(seed, 300, 16)
    e = Engine(m, js, ranking(policy, total_procs=float(m.cores)), backfill=True)
    assert exclusive._whole_watts(e.meter.watts, [16.0])
    rebuilt = e.run()
    monkeypatch.setattr(exclusive, "_whole_watts", lambda base, dw: False)
    recorded = Engine(m, js, ranking(policy, total_procs=float(m.cores)), backfill=True).run()
    assert rebuilt.timeline == recorded.timeline and len(recorded.timeline["t"]) > 100
    for key, values in recorded.timeline.items():
        assert [type(v) for v in rebuilt.timeline[key]] == [type(v) for v in values], key
    assert (rebuilt.energy_j, rebuilt.cost) == (recorded.energy_j, recorded.cost)
    assert not exclusive._whole_watts(0.0, [0.5])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("policy", ["fcfs", "sjf"])
def test_lean_static_loop_equals_the_summing_loop(seed, policy, monkeypatch):
    """Whole run times and watts: static rankings take the lean loop (no watts, core-seconds or start order kept,
    the sums rebuilt after it); everything must equal the loop that keeps them."""
    m = homogeneous(16, 1)
    js = random_jobs(seed, 300, 16)
    js.limit[:] = np.floor(js.limit)  # whole limits, so whole run times (a job runs min(run, limit))
    e = Engine(m, js, ranking(policy, total_procs=float(m.cores)), backfill=True)
    assert exclusive._whole_core_s(e.run_eff, js.nodes, 1, 0.0)
    lean = e.run()
    monkeypatch.setattr(exclusive, "_whole_core_s", lambda *a: False)
    e2 = Engine(m, js, ranking(policy, total_procs=float(m.cores)), backfill=True)
    full = e2.run()
    np.testing.assert_array_equal(lean.begin, full.begin)
    np.testing.assert_array_equal(lean.group_core_s, full.group_core_s)
    assert (lean.energy_j, lean.cost, lean.events, lean.timeline) == (full.energy_j, full.cost, full.events, full.timeline)
    assert (e.meter.watts, e.meter.t, e.pending) == (e2.meter.watts, e2.meter.t, e2.pending)
    assert not exclusive._whole_core_s(np.array([1.5]), np.array([1]), 1, 0.0)
