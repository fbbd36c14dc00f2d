"""Power state machine, PID controller and calendars (pure functions, hand-checked cases)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from slurm_plugin.scale.calendar import is_active
from slurm_plugin.scale.pid import DEFAULT_GAINS, PidGains, PidState, pid_step
from slurm_plugin.scale.power_state import (TRANSITIONS, Event, InvalidTransition, NodePower, Power, observed,
                                            sync)
from slurm_plugin.site import load_site

# --- power state machine ------------------------------------------------------------------------------------


def test_full_cycle_has_a_timestamped_history_with_causes():
    n = NodePower("a1", Power.ON, 0.0)
    n = n.apply(Event.REQUEST_DOWN, 10, "idle 600 s").apply(Event.HALTED, 40)
    n = n.apply(Event.REQUEST_UP, 100, "backlog 3 jobs").apply(Event.BOOTED, 160)
    assert n.state == Power.ON and n.since == 160
    assert [(c.t, c.frm, c.to) for c in n.history] == [
        (10, Power.ON, Power.POWERING_DOWN), (40, Power.POWERING_DOWN, Power.OFF),
        (100, Power.OFF, Power.POWERING_UP), (160, Power.POWERING_UP, Power.ON)]
    assert n.history[0].cause == "idle 600 s"
    assert n.history[1].cause == TRANSITIONS[(Power.POWERING_DOWN, Event.HALTED)][1]


def test_repeated_requests_are_idempotent():
    n = NodePower("a1", Power.OFF, 0).apply(Event.REQUEST_UP, 1)
    assert n.apply(Event.REQUEST_UP, 2) is n
    assert NodePower("a1", Power.ON, 0).apply(Event.REQUEST_UP, 5).history == ()


@pytest.mark.parametrize("state,event", [(Power.POWERING_UP, Event.REQUEST_DOWN), (Power.ON, Event.TIMED_OUT),
                                         (Power.OFF, Event.REMEDIATE), (Power.POWERING_DOWN, Event.REQUEST_UP)])
def test_events_without_an_edge_are_refused(state, event):
    with pytest.raises(InvalidTransition):
        NodePower("x", state, 0).apply(event, 1)


def test_stuck_powering_up_is_detected_and_remediated():
    n = NodePower("g1", Power.OFF, 0).apply(Event.REQUEST_UP, 0)
    assert not n.stuck(now=299, resume_timeout=300, suspend_timeout=60)
    assert n.stuck(now=301, resume_timeout=300, suspend_timeout=60)
    n = n.apply(Event.TIMED_OUT, 301).apply(Event.REMEDIATE, 302)
    assert n.state == Power.POWERING_DOWN


@pytest.mark.parametrize("slurm_state,power", [
    ("IDLE", Power.ON), ("MIXED", Power.ON), ("IDLE+POWERED_DOWN", Power.OFF),
    ("IDLE+POWERING_DOWN", Power.POWERING_DOWN), ("MIXED+NOT_RESPONDING+POWERING_UP", Power.POWERING_UP),
    ("DOWN+DRAIN+POWERED_DOWN", Power.OFF),
])
def test_observed(slurm_state, power):
    assert observed(slurm_state) == power


def test_sync_follows_slurm_passively():
    n = NodePower("a1", Power.ON, 0)
    n = sync(n, "IDLE+POWERING_DOWN", 5)
    n = sync(n, "IDLE+POWERED_DOWN", 40)
    assert n.state == Power.OFF and [c.event for c in n.history] == [Event.REQUEST_DOWN, Event.HALTED]
    assert sync(n, "IDLE+POWERED_DOWN", 50) is n

# --- PID ------------------------------------------------------------------------------------------------------


def simulate_step(gains: PidGains, periods: int = 20, target: float = 10.0) -> list[float]:
    """Integrating plant: powered nodes y grow by the controller's output each period (boot within a period)."""
    y, state, out = 0.0, PidState(), []
    for _ in range(periods):
        u, state = pid_step(gains, state, target, y, dt_s=60.0)
        y += u
        out.append(y)
    return out


def test_step_response_settles_within_five_periods_without_overshoot():
    ys = simulate_step(replace(DEFAULT_GAINS, out_min=-8, out_max=8))
    overshoot = max(0.0, max(ys) - 10.0) / 10.0
    settled = next(i for i in range(len(ys)) if all(abs(y - 10.0) <= 0.5 for y in ys[i:])) + 1
    assert overshoot < 0.10, ys
    assert settled <= 5, ys


def test_anti_windup_keeps_the_integral_while_saturated():
    gains = PidGains(kp=1.0, ki=1.0, kd=0.0, out_min=-1, out_max=1)
    state = PidState()
    for _ in range(50):
        out, state = pid_step(gains, state, 100.0, 0.0, 60.0)
        assert out == 1
    assert state.integral == 0.0  # never integrated while pinned at the limit


def test_deadband_means_no_action_near_the_setpoint():
    out, state = pid_step(PidGains(kp=2, ki=1, kd=0, deadband=0.05), PidState(), 0.70, 0.68, 60.0)
    assert out == 0 and state.integral == 0


# --- calendars ------------------------------------------------------------------------------------------------

SITE = load_site("demo")
NIGHTS, WEEKENDS, WORKDAYS = SITE.policy.calendars


@pytest.mark.parametrize("cal,utc,tz,active", [
    (NIGHTS, "2026-11-30T18:30", "Europe/Paris", True),    # 19:30 in Paris
    (NIGHTS, "2026-11-30T17:30", "Europe/Paris", False),   # 18:30 in Paris
    (NIGHTS, "2026-11-30T05:30", "Europe/Paris", True),    # 06:30 in Paris, the night that began Sunday
    (NIGHTS, "2026-11-30T05:30", "Asia/Shanghai", False),  # 13:30 in Shanghai
    (WEEKENDS, "2026-11-28T23:30", "Europe/Paris", True),  # Sunday 00:30 in Paris
    (WEEKENDS, "2026-11-29T23:30", "Europe/Paris", False),  # Monday 00:30 in Paris
    (WEEKENDS, "2026-11-29T23:30", "America/New_York", True),  # still Sunday 18:30 in New York
    (WORKDAYS, "2026-12-01T09:00", "Europe/Paris", True),
    (WORKDAYS, "2026-12-05T09:00", "Europe/Paris", False),  # Saturday
])
def test_calendar_in_the_nodes_time_zone(cal, utc, tz, active):
    when = dt.datetime.fromisoformat(utc).replace(tzinfo=dt.timezone.utc)
    assert is_active(cal, when, tz) is active


def test_naive_datetimes_are_refused():
    with pytest.raises(ValueError):
        is_active(NIGHTS, dt.datetime(2026, 1, 1), "UTC")
