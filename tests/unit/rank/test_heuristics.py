"""Baseline scores against hand-computed values (formulas of RLScheduler's HPCSimPickJobs.py)."""

import numpy as np
import pytest

from slurm_plugin.rank import HEURISTICS, Multifactor, QueueView


def view(submit, limit, procs, qos=0.0, now=1000.0):
    a = lambda v: np.atleast_1d(np.asarray(v, dtype=float))  # noqa: E731
    return QueueView(a(submit), a(limit), a(procs), a(qos), now)


@pytest.mark.parametrize("name,submit,limit,procs,now,expected", [
    ("fcfs", 900, 100, 4, 1000, 900.0),
    ("sjf", 900, 100, 4, 1000, 100.0),
    ("wfp3", 900, 50, 2, 1000, -16.0),                 # -(100/50)^3 * 2
    ("unicep", 900, 50, 4, 1000, -1.0),                # -100 / (log2(4) * 50)
    ("f1", 1000, 100, 4, 0, 2618.0),                   # log10(100)*4 + 870*log10(1000)
    ("f1", 0, 0, 1, 0, -1.0 + 870 * -1.0),             # log10 args <= 0 -> 0.1
    ("wfp3", 100, 10, 3, -1, -((-101 / 10) ** 3) * 3),  # RLScheduler's wait of -1 - submit
])
def test_scores(name, submit, limit, procs, now, expected):
    fn, _ = HEURISTICS[name]
    assert fn(view(submit, limit, procs, now=now))[0] == pytest.approx(expected)


def test_order_sjf_vs_fcfs():
    v = view([0, 10, 20], [300, 100, 200], [1, 1, 1], now=30)
    assert np.argsort(HEURISTICS["fcfs"][0](v)).tolist() == [0, 1, 2]
    assert np.argsort(HEURISTICS["sjf"][0](v)).tolist() == [1, 2, 0]


def test_static_flags():
    assert {k for k, (_, static) in HEURISTICS.items() if static} == {"fcfs", "sjf", "f1"}


def test_multifactor_age_size_qos():
    mf = Multifactor(weight_age=1000, weight_size=100, weight_qos=1000, max_age_s=1000, total_procs=100,
                     max_qos=1000)
    s = mf(view([0, 500, 900], [1, 1, 1], [10, 50, 1], qos=[0, 0, 1000], now=1000))
    assert s.tolist() == pytest.approx([-(1000 + 10), -(500 + 50), -(100 + 1 + 1000)])
    assert np.argsort(s).tolist() == [2, 0, 1]
    # integer priority like Slurm's: 0.4 of a point apart ties
    tie = mf(view([0, 0], [1, 1], [10, 10.4], now=0))
    assert tie[0] == tie[1] == -10


def test_multifactor_job_size_is_slurms():
    """Slurm's default job size factor, (nodes / all nodes + CPUs / all CPUs) / 2: the InitPrio slurmctld 22.05
    logged for the fidelity replay's jobs on the demo cluster (10 nodes, 456 CPUs, PriorityWeightJobSize=100)."""
    mf = Multifactor(weight_age=1000, weight_size=100, weight_qos=0, total_procs=456, total_nodes=10)
    nodes, procs = [2, 1, 1, 2, 2, 1, 1, 1], [128, 64, 32, 2, 8, 16, 4, 1]
    v = QueueView(np.zeros(8), np.full(8, 60.0), np.array(procs, float), np.zeros(8), 0.0,
                  nodes=np.array(nodes, float))
    assert (-mf(v)).tolist() == [24, 12, 8, 10, 10, 6, 5, 5]
    # without node counts (SWF machines, no site): CPUs only, as before
    assert (-Multifactor(weight_size=100, total_procs=456)(view([0, 0], [1, 1], [2, 16], now=0.0))).tolist() == [0, 3]
