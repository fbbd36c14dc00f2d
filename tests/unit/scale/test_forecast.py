"""The calendar forecast of a group's arrival rate: hand-computed windows over hourly bins, and the policy option."""

from __future__ import annotations

import pytest

from slurm_plugin.scale.forecast import forecast_rate, window_count

H = 3600.0


def test_window_count_whole_and_partial_bins():
    hourly = {0: 6.0, 1: 12.0, 2: 3.0}
    assert window_count(hourly, 0, 2 * H) == 18.0  # bins 0 and 1 whole
    assert window_count(hourly, 0.5 * H, 1.5 * H) == 3.0 + 6.0  # half of each: 3 + 6
    assert window_count(hourly, 2.5 * H, 4 * H) == 1.5  # half of bin 2, bin 3 empty
    assert window_count(hourly, H, H) == 0.0


def test_forecast_yesterdays_ramp_module_example():
    hourly = {24: 10.0, 25: 10.0}
    recent = 1 / H
    got = forecast_rate(recent, hourly, 47 * H, 2 * H, since=0, lead_s=0.5 * H)
    # window [47 - 24 + 0.5, + 2) = [23.5 h, 25.5 h): half of bin 23 (0) + bin 24 (10) + half of bin 25 (5) = 15
    assert got.rate * H == pytest.approx(max(1.0, 15 / 2))
    got = forecast_rate(recent, hourly, 47.5 * H, 2 * H, since=0, lead_s=0.5 * H)  # window 24 h - 26 h: 20 jobs
    assert got.rate * H == pytest.approx(10.0)
    mean = forecast_rate(recent, hourly, 47.5 * H, 2 * H, since=0, lead_s=0.5 * H, combine="mean")
    assert mean.rate * H == pytest.approx(5.5)  # (1 + 10) / 2
    assert "same time 1 day(s) before 10.0" in got.reason


def test_forecast_falls_back_to_recent_without_history_and_keeps_a_higher_recent_rate():
    hourly = {24: 10.0, 25: 10.0}
    # recording began at 30 h: yesterday's window (24 h) is not covered, the recent rate is used
    assert forecast_rate(2 / H, hourly, 47.5 * H, 2 * H, since=30 * H).rate * H == pytest.approx(2.0)
    # max keeps the recent rate when it is higher (an unusual busy day)
    assert forecast_rate(30 / H, hourly, 47.5 * H, 2 * H, since=0).rate * H == pytest.approx(30.0)
    # two days: the mean of the covered ones (day 2's window, 0-2 h before the data, has 0 jobs)
    two = forecast_rate(0.0, hourly, 47.5 * H, 2 * H, since=0, days=(1, 2), lead_s=0.5 * H)
    assert two.rate * H == pytest.approx((10.0 + 0.0) / 2)


def test_forecast_rejects_bad_inputs():
    with pytest.raises(ValueError):
        forecast_rate(0.0, {}, 0.0, 2 * H, since=0, combine="median")
    with pytest.raises(ValueError):
        forecast_rate(0.0, {}, 0.0, 0.0, since=0)


def test_warm_pool_power_prewarms_from_yesterday():
    """10 one-core SWF nodes (100 W idle, 120 s boot: break-even 12120 s at 10000 W), all off. 20 jobs arrived
    in hour 24 yesterday and none in the last 2 h. At 47.5 h yesterday's window 24-26 h holds them: 10 jobs/h x
    12120 s = 33.7 expected, so all 10 nodes are powered up; without the forecast, none."""
    import numpy as np

    from slurm_plugin.sim.scaling import WarmPoolPower
    from slurm_plugin.sim.hooks import PowerView
    from slurm_plugin.sim.machine import homogeneous
    from slurm_plugin.sim.power import OFF

    machine = homogeneous(10, 1)
    ups = {}
    for forecast in (None, "max"):
        pol = WarmPoolPower(machine, forecast=forecast)
        state, idle_for = np.full(10, OFF), np.full(10, -1.0)
        for now, arrived in ((0.0, 0), (24.25 * H, 20), (47.5 * H, 20)):
            _, up = pol.decide(PowerView(now, state, idle_for, 0, arrived=np.array([arrived])))
        ups[forecast] = len(up)
    assert ups == {None: 0, "max": 10}
