"""Backfill plans made from a later start (``TRY_LATER``): never before that start, never given up for it."""

from __future__ import annotations

import numpy as np

from slurm_plugin.sim.hooks import ranking
from slurm_plugin.sim.power import BOOTING, SHUTTING
from slurm_plugin.sim.slurm_backfill import BackfillWindow, SlurmBackfillEngine

from .helpers import jobs, machine, nodes


def _engine(**kw) -> SlurmBackfillEngine:
    """Two idle 4-core nodes and one 1-core, 60 s job (not run: the tests plan it by hand)."""
    return SlurmBackfillEngine(machine(nodes(2, cores=4)), jobs(dict(submit=0, run=60)), ranking("fcfs"),
                               reservations=100, **kw)


def _mask(*nodes_on: int) -> np.ndarray:
    m = np.zeros(2, dtype=bool)
    m[list(nodes_on)] = True
    return m


def test_a_booting_node_is_ready_no_earlier_than_the_time_asked_about():
    """A plan made from a later start (``now``) must not use a booting node at its boot's end when that lies
    before ``now``: it is ready at ``now``."""
    e = _engine()
    c = e.cluster
    c.all_on = False  # as with power saving
    c.state[0], c.ready_at[0] = BOOTING, 30.0
    assert c.ready_time(np.array([0]), 10.0)[0] == 30.0
    assert c.ready_time(np.array([0]), 100.0)[0] == 100.0
    assert c.ready_one(0, 100.0) == 100.0


def test_a_plan_from_a_later_start_is_not_the_one_remembered_from_now():
    """Both nodes are reserved until 120 s. From now (0 s) the job cannot be planned outside those windows; from
    120 s nothing is in the way. The cluster remembers a plan made at 0 s for this request (the head's plan):
    reused from 120 s it started at 0 s, clashed with the windows again and again, and the job got no plan."""
    e = _engine()
    r = e._req_of(0)
    assert e.cluster.plan(0, r, 0.0).time == 0.0  # remembered for this request
    windows = [BackfillWindow(0.0, 120.0, _mask(0)), BackfillWindow(0.0, 120.0, _mask(1))]
    plan = e.plan_windowed(0, r, 0.0, windows)
    assert plan is not None and plan.time == 120.0


def test_a_job_that_fits_only_on_a_node_powering_down_gets_no_plan():
    """slurmctld takes a node that is powering down out of the available nodes: no plan there (the replay
    marked it free a billion seconds ahead, and such a plan took a window and counted as a reservation)."""
    e = _engine(slurm_select=True)
    e.cluster.state[:] = SHUTTING
    e.cluster.ready_at[:] = 5.0
    assert e.plan_windowed(0, e._req_of(0), 0.0, []) is None


def test_a_plan_running_into_a_window_is_tried_again_from_its_own_start():
    """A holds node 0 until 50 s, B node 1 until 80 s; a window holds node 0 from 100 to 200 s. C (60 s) fits
    first on node 0 at 50 s, which runs into the window. Slurm tries again from 50 s with node 0 left out
    (backfill.c ``_test_resv_overlap``: ``later_start`` = the planned start) and plans C on node 1 at 80 s; from
    the window's end (the replay before session 24) it planned C at 200 s."""
    e = SlurmBackfillEngine(machine(nodes(2, cores=4)),
                            jobs(dict(submit=0, run=50, cores=4), dict(submit=0, run=80, cores=4),
                                 dict(submit=0, run=60, cores=4)), ranking("fcfs"), reservations=100)
    e._run_eff = e.run_eff.tolist()  # as run() sets it
    for j, node in ((0, 0), (1, 1)):
        e._start(j, e._req_of(j), None, 0.0, nodes=np.array([node]))
    plan = e.plan_windowed(2, e._req_of(2), 0.0, [BackfillWindow(100.0, 200.0, _mask(0))])
    assert plan is not None and plan.time == 80.0 and plan.mask.tolist() == [False, True]
