"""One PID, one time unit: the live planner and the simulator's policy integrate the same error over the same
minutes, so one PolicySpec's gains act alike live and simulated (they integrated over seconds live, over
minutes simulated, before scale/pid.pid_headroom was shared)."""

from __future__ import annotations

import numpy as np
import pytest

from slurm_plugin.scale.pid import DEFAULT_GAINS, PidState, pid_headroom, pid_step
from slurm_plugin.scale.planner import GroupLimits, ScaleConfig, ScaleMemory, plan_power
from slurm_plugin.sim.machine import machine_from_site
from slurm_plugin.sim.power import ON
from slurm_plugin.sim.scaling import WarmPoolPower
from slurm_plugin.sim.views import PowerView

from ..cycle.builders import SITE, demo_node, demo_snapshot

HOSTS = [h for g in SITE.node_groups for h in g.hostnames]
ARM = [g.name for g in SITE.node_groups].index("cpu-arm")
CONFIG = ScaleConfig(wait_price_w=None, default_limits=GroupLimits(warm=0), arch=False, pid=True)


def live_pid(period_s: float, cycles: int) -> PidState:
    """The arm group's PID state after ``cycles`` cycles ``period_s`` apart, its 3 nodes busy (utilization 1)."""
    snap = demo_snapshot(**{h: demo_node(h, "allocated", alloc=64) for h in ("armn1", "armn2", "armn3")})
    memory = ScaleMemory()
    for k in range(cycles):
        _, memory = plan_power(snap, SITE, CONFIG, memory, 1000.0 + k * period_s)
    return memory.pid["cpu-arm"]


def sim_pid(interval_s: float, periods: int) -> PidState:
    policy = WarmPoolPower(machine_from_site(SITE), wait_price_w=None, warm_nodes=0, use_pid=True,
                           interval_s=interval_s)
    state = np.full(len(HOSTS), ON)
    idle_for = np.array([-1.0 if h.startswith("armn") else 10.0 for h in HOSTS])
    for k in range(periods):
        policy.decide(PowerView(1000.0 + k * interval_s, state, idle_for, 0))
    return policy._pid[ARM]


def test_live_and_simulated_pid_integrate_the_same_minutes():
    live, sim = live_pid(60.0, 5), sim_pid(60.0, 5)
    assert live == sim
    assert live.integral == pytest.approx(-0.25 * 5)  # error x minutes: the gains' unit
    assert live_pid(30.0, 9).integral == pytest.approx(-0.25 * 5)  # first cycle one minute, then 8 x 30 s


def test_gains_are_per_minute_whatever_the_period():
    a, b = PidState(), PidState()
    for _ in range(4):
        _, a = pid_step(DEFAULT_GAINS, a, 0.75, 1.0, 60.0)
    for _ in range(8):
        _, b = pid_step(DEFAULT_GAINS, b, 0.75, 1.0, 30.0)
    assert a.integral == pytest.approx(b.integral) == pytest.approx(-1.0)


def test_headroom_only_above_target_and_never_winds_up_below_it():
    assert pid_headroom(DEFAULT_GAINS, PidState(), 0.75, 3, 3, 60.0)[0] == 1  # ceil(0.205 x 3)
    head, state = 0, PidState()
    for _ in range(100):  # an idle group: the output saturates at 0, the integral stays put
        head, state = pid_headroom(DEFAULT_GAINS, state, 0.75, 0, 4, 60.0)
    assert head == 0 and state.integral == 0.0
