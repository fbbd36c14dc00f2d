"""Schedules known by hand: backfill that must and must not happen, arch and GRES constraints, boot delays."""

import numpy as np
import pytest

from slurm_plugin.sim.hooks import IdleSuspend
from slurm_plugin.sim.machine import GroupSpec

from .helpers import jobs, machine, nodes, simulate

CASES = [
    # (name, machine, jobs, backfill, expected begin times by job)
    ("fcfs no backfill waits in order", machine(nodes(4)),
     [dict(submit=0, run=100, nodes=4), dict(submit=1, run=50, nodes=2), dict(submit=2, run=10, nodes=1)],
     False, [0, 100, 100]),
    ("short job backfills before the reservation", machine(nodes(4)),
     [dict(submit=0, run=100, nodes=2), dict(submit=1, run=50, nodes=4), dict(submit=2, run=50, nodes=2)],
     True, [0, 100, 2]),
    ("long job must not backfill into the reservation", machine(nodes(4)),
     [dict(submit=0, run=100, nodes=2), dict(submit=1, run=50, nodes=4), dict(submit=2, run=50, limit=200,
                                                                               nodes=2)],
     True, [0, 100, 150]),
    ("long job backfills on the extra node only", machine(nodes(5)),
     [dict(submit=0, run=100, nodes=2), dict(submit=1, run=50, nodes=4), dict(submit=2, run=500, nodes=1),
      dict(submit=3, run=500, nodes=2)],
     True, [0, 100, 2, 150]),
    ("planning uses limits, not run times", machine(nodes(2)),
     [dict(submit=0, run=10, limit=100, nodes=1), dict(submit=1, run=10, nodes=2),
      dict(submit=2, run=60, limit=60, nodes=1)],
     True, [0, 62, 2]),  # planned at 100 (limit), so the 60 s job backfills; the head waits for it
    ("without backfill a fitting job behind a blocked head waits", machine(nodes(2)),
     [dict(submit=0, run=100, nodes=1), dict(submit=1, run=10, nodes=2), dict(submit=2, run=5, nodes=1)],
     False, [0, 100, 110]),
    ("shared node: two half jobs together, a third waits", machine(nodes(1, cores=4)),
     [dict(submit=0, run=100, cores=2), dict(submit=0, run=100, cores=2), dict(submit=1, run=10, cores=1)],
     True, [0, 0, 100]),
    ("partial-node reservation: short backfill ok", machine(nodes(1, cores=4)),
     [dict(submit=0, run=100, cores=3), dict(submit=1, run=10, cores=2), dict(submit=2, run=50, cores=1),
      dict(submit=3, run=500, cores=1)],
     True, [0, 100, 2, 100]),
    ("arch constraint picks the arm group", machine(nodes(1, cores=4, name="x86", arch="x86_64"),
                                                     nodes(1, cores=4, name="arm", arch="aarch64")),
     [dict(submit=0, run=100, cores=4, arch=("aarch64",)), dict(submit=1, run=10, cores=4, arch=("aarch64",)),
      dict(submit=1, run=10, cores=4, arch=("x86_64", "aarch64"))],
     True, [0, 100, 1]),
    ("typed GRES waits for its own type", machine(
        GroupSpec("a100", 1, cores=8, gres={("gpu", "a100"): 2}), GroupSpec("h100", 1, cores=8,
                                                                            gres={("gpu", "h100"): 2})),
     [dict(submit=0, run=100, gres=("gpu", "a100", 2)), dict(submit=1, run=10, gres=("gpu", "a100", 1)),
      dict(submit=2, run=10, gres=("gpu", "h100", 2)), dict(submit=3, run=10, gres=("gpu", None, 1))],
     True, [0, 100, 2, 12]),
    ("a whole-node job waits for a node with enough cores", machine(
        GroupSpec("small", 1, cores=16, cost_per_hour=1.0), GroupSpec("big", 1, cores=32, cost_per_hour=2.0)),
     [dict(submit=0, run=100, cores=32), dict(submit=1, run=10, cores=32)],
     True, [0, 100]),  # the cheaper 16-core node is idle throughout and must not take either
]


@pytest.mark.parametrize("name,m,rows,backfill,expected", CASES, ids=[c[0] for c in CASES])
def test_exact_schedule(name, m, rows, backfill, expected):
    e = simulate(m, jobs(*rows), backfill=backfill)
    assert e.begin.tolist() == expected


def test_arch_placement_lands_on_the_right_group():
    m = machine(nodes(2, cores=4, name="x86", arch="x86_64"), nodes(2, cores=4, name="arm", arch="aarch64"))
    e = simulate(m, jobs(dict(submit=0, run=10, cores=4, nodes=2, arch=("aarch64",))))
    assert e.outcome.group_core_s.tolist() == [0.0, 80.0]


def test_boot_delay_after_idle_suspend():
    m = machine(nodes(2, cores=1, boot_s=120, shutdown_s=30, idle_w=100, busy_w=300, off_w=10))
    js = jobs(dict(submit=0, run=10, nodes=1), dict(submit=1000, run=10, nodes=2))
    e = simulate(m, js, scaling=IdleSuspend(suspend_time_s=100))
    # both nodes idle >= 100 s are powered down by t=1000; the second job boots them: 120 s
    assert e.begin.tolist() == [0, 1120]
    assert e.cluster.state.tolist() == [0, 0]  # on again after the boot


def test_energy_always_on_is_exact():
    m = machine(nodes(2, cores=2, idle_w=100, busy_w=300))
    e = simulate(m, jobs(dict(submit=0, run=100, cores=1, nodes=1)))
    # t 0..100: two nodes idle (200 W) + one half-busy node (+100 W) = 300 W x 100 s
    assert e.outcome.energy_j == pytest.approx(300 * 100)


def test_job_killed_at_time_limit():
    e = simulate(machine(nodes(1)), jobs(dict(submit=0, run=500, limit=100), dict(submit=0, run=1)))
    assert e.end.tolist() == [100, 101]
    assert e.outcome.timeouts == 1


def test_higher_priority_arrival_takes_the_reservation():
    # SJF re-ranks at every event: the short 2-node job (arriving later) is served before the long one.
    m = machine(nodes(2))
    js = jobs(dict(submit=0, run=100, nodes=1), dict(submit=1, run=1000, nodes=2),
              dict(submit=2, run=10, nodes=2))
    e = simulate(m, js, policy="sjf")
    assert e.begin.tolist() == [0, 110, 100]
    assert np.isnan(e.begin).sum() == 0


@pytest.mark.parametrize("reservations,expected", [(1, [0, 100, 150, 3]), (10, [0, 100, 100, 150])])
def test_slurm_like_reservations_protect_the_second_blocked_job(reservations, expected):
    # EASY protects only B; with a reservation per blocked job, C's (nodes 3-4 at 100) keeps D from n4
    js = jobs(dict(submit=0, run=100, nodes=3), dict(submit=1, run=50, nodes=2), dict(submit=2, run=50, nodes=2),
              dict(submit=3, run=500, nodes=1))
    e = simulate(machine(nodes(4)), js, reservations=reservations)
    assert e.begin.tolist() == expected


@pytest.mark.parametrize("bf_times,expected", [
    (None, [0, 100, 2]),         # backfill at every event: C starts on arrival
    ([0.0, 30.0], [0, 100, 30]),  # Slurm's cycles (recorded on the real cluster): C waits for the one at 30 s
    ([0.0, 1.5], [0, 100, 150]),  # the last cycle came before C: only the main pass starts it, after B
])
def test_backfill_only_at_given_cycle_times(bf_times, expected):
    # A holds 2 of 4 nodes until 100, B (4 nodes) waits for it, C (2 nodes, ends before 100) can backfill
    js = jobs(dict(submit=0, run=100, nodes=2), dict(submit=1, run=50, nodes=4), dict(submit=2, run=50, nodes=2))
    e = simulate(machine(nodes(4)), js, bf_times=bf_times)
    assert e.begin.tolist() == expected
