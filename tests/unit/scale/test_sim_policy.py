"""The hetsched power policy as the simulator calls it, and the scale eval rows on a small workload."""

from __future__ import annotations

import numpy as np

from slurm_plugin.sim.scaling_eval import evaluate, pid_sim_step, pid_step_response, settling
from slurm_plugin.sim.scaling import WarmPoolPower
from slurm_plugin.sim.hooks import PowerView
from slurm_plugin.sim.machine import machine_from_site
from slurm_plugin.sim.power import OFF, ON
from slurm_plugin.sim.run import prepare
from slurm_plugin.site import load_site

LARGE = machine_from_site(load_site("large"))


def test_grace_and_warm_pool_per_group():
    pol = WarmPoolPower(LARGE, grace_s=120, warm_fraction=0.01)  # us-x86 (512 nodes) keeps 5 warm
    n = LARGE.nodes
    state = np.full(n, ON)
    idle_for = np.full(n, 500.0)
    idle_for[:3] = 60.0  # three nodes of us-x86 went idle a minute ago
    down, up = pol.decide(PowerView(0.0, state, idle_for, 0))
    x86 = set(range(512))
    kept = x86 - set(down.tolist())
    assert len(kept) == 5 and {0, 1, 2} <= kept  # the most recently idle stay warm
    assert len(up) == 0


def test_warm_pool_is_refilled_from_off_nodes():
    pol = WarmPoolPower(LARGE, warm_fraction=0.01)
    state = np.full(LARGE.nodes, OFF)
    _, up = pol.decide(PowerView(0.0, state, np.full(LARGE.nodes, -1.0), 0))
    assert len(up[up < 512]) == 5  # us-x86: 1 % of 512, rounded down


def test_eval_rows_on_a_small_synthetic_workload():
    p = prepare("synthetic:jobs=300,seed=2,load=0.3", "demo")
    rows, stability = evaluate(p, grace_s=120)
    rows = {r["policy"]: r for r in rows}
    assert set(rows) == {"always-on", "idle-timer", "hetsched", "hetsched+pid", "hetsched+arch", "pid"}
    assert stability["moves_per_day"] > 0 and len(stability["trajectory"]["t"]) > 10
    assert rows["hetsched"]["energy_kwh"] < rows["always-on"]["energy_kwh"]
    assert rows["idle-timer"]["energy_kwh"] < rows["always-on"]["energy_kwh"]
    assert len({round(r["utilization"], 6) for r in rows.values()}) == 1  # same work done


def test_pid_step_response_figures():
    step = pid_step_response()
    assert step["settle_periods"] <= 5 and step["overshoot"] < 0.10


def test_settling_table():
    assert settling([16, 24, 30, 31, 32, 32], 32) == {"settle_periods": 4, "overshoot": 0.0}
    assert settling([16, 40, 32, 32], 32) == {"settle_periods": 3, "overshoot": 0.25}
    assert settling([32, 14, 16, 16], 16) == {"settle_periods": 3, "overshoot": 0.125}  # a down step undershoots


def test_pid_step_measured_in_the_simulator_meets_the_target():
    step = pid_sim_step()
    assert step["settle_periods"] <= 5 and step["overshoot"] < 0.10
    assert step["down_step"]["settle_periods"] <= 5 and step["down_step"]["overshoot"] < 0.10
    tr = step["trajectory"]
    later = [p for t, p in zip(tr["t"], tr["powered"]) if t > 3600]  # past the start (all 40 nodes on)
    assert max(later) == 32  # 24 busy / 0.75, never more


def test_pid_step_with_aggressive_gains_overshoots():
    from slurm_plugin.scale.pid import PidGains
    step = pid_sim_step(PidGains(kp=1.6, ki=0.5, kd=0.0))
    assert step["overshoot"] >= 0.10 or step["settle_periods"] > 5  # the figure can fail
