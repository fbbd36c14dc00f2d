"""The hourly capacity plan of `hetsched cost plan` as a floor of the power planner, live and simulated."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.decision import Cause, PowerNodes
from slurm_plugin.policy import PolicyError, load_policy
from slurm_plugin.scale.capacity_plan import CapacityPlanError, load_capacity_plan, plan_from_dict
from slurm_plugin.scale.planner import GroupLimits, ScaleConfig, ScaleMemory, plan_power
from slurm_plugin.sim.run import prepare, simulate
from slurm_plugin.sim.policy import sim_scaling

from .test_planner import SITE, node, snapshot

SITE_GROUPS = {g.name: g.count for g in SITE.node_groups}

START = "1970-01-01T00:16:40+00:00"  # epoch 1000


def plan(power: dict, start: str = START, hour_s: int = 3600) -> dict:
    return {"policy": {"calendars": []}, "plan": {"start": start, "hour_s": hour_s, "power": power}}


def test_the_plans_hour_is_a_floor_with_its_own_cause_and_reason():
    cfg = ScaleConfig(idle_grace_s=300, groups={"cpu-arm": GroupLimits(warm=0)},
                      plan=plan_from_dict(plan({"cpu-arm": [0, 2]}), "/etc/p.yaml"))
    off = {h: node(h, flags=("powered_down",)) for h in ("armn1", "armn2", "armn3")}
    decision, _ = plan_power(snapshot(off), SITE, cfg, ScaleMemory(), 1000.0 + 3600)  # hour 1: 2 on
    [up] = [a for a in decision.actions if isinstance(a, PowerNodes) and a.action == "POWER_UP"]
    assert up.nodes == ("armn1", "armn2") and up.cause == Cause.CAPACITY_PLAN
    assert "capacity plan p.yaml hour 1: 2 on" in up.reason
    for now in (1000.0, 1000.0 + 2 * 3600, 999.0):  # hour 0 (0 on), past the plan's end, before its start
        decision, _ = plan_power(snapshot(off), SITE, cfg, ScaleMemory(), now)
        assert not [a for a in decision.actions if a.action == "POWER_UP"]


def test_idle_nodes_the_plan_keeps_are_not_powered_down():
    cfg = ScaleConfig(idle_grace_s=300, plan=plan_from_dict(plan({"cpu-arm": [3, 3]})))
    _, mem = plan_power(snapshot({}), SITE, cfg, ScaleMemory(), 1000.0)
    decision, _ = plan_power(snapshot({}), SITE, cfg, mem, 1000.0 + 1000)
    downs = {n for a in decision.actions if a.action == "POWER_DOWN" for n in a.nodes}
    assert downs and not downs & {"armn1", "armn2", "armn3"}  # x86n1 etc. still go down
    without, _ = plan_power(snapshot({}), SITE, ScaleConfig(idle_grace_s=300), mem, 1000.0 + 1000)
    assert {"armn1", "armn2"} <= {n for a in without.actions if a.action == "POWER_DOWN" for n in a.nodes}


@pytest.mark.parametrize("doc, where", [
    ({}, "plan: missing"),
    (plan({"g": [1]}, start="monday"), "plan.start"),
    (plan({"g": [1]}, hour_s=0), "plan.hour_s"),
    (plan({}), "plan.power"),
    (plan({"g": [1, -1]}), "plan.power.g"),
    (plan({"g": "3"}), "plan.power.g"),
])
def test_a_bad_plan_names_the_field(doc, where):
    with pytest.raises(CapacityPlanError, match=f"x.yaml: {where}"):
        plan_from_dict(doc, "x.yaml")


def test_a_plan_against_the_site_names_the_group(tmp_path):
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump(plan({"cpu-arm": [4]})))
    with pytest.raises(CapacityPlanError, match="cpu-arm: 4 nodes on, the group has 3"):
        load_capacity_plan(f, {"cpu-arm": 3})
    with pytest.raises(CapacityPlanError, match="no such node group"):
        load_capacity_plan(f, {"gpu": 3})


def test_the_policy_reads_the_plan_next_to_it_and_refuses_it_where_it_is_not_read(tmp_path):
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan({"cpu-arm": [1]})))
    (tmp_path / "policy.yaml").write_text("scaling: {name: planner, capacity_plan: plan.yaml}\n")
    spec = load_policy(tmp_path / "policy.yaml")
    assert spec.scaling.capacity_plan == str(tmp_path / "plan.yaml")
    from slurm_plugin.cycle.policy import cycle_config
    assert cycle_config(spec, SITE_GROUPS).scale.plan.nodes_on("cpu-arm", 1000.0) == 1
    with pytest.raises(ValueError, match="without the site's node groups"):  # never read unchecked
        cycle_config(spec)
    (tmp_path / "bad.yaml").write_text("scaling: {name: idle-timer, capacity_plan: plan.yaml}\n")
    with pytest.raises(PolicyError, match="scaling.capacity_plan"):
        load_policy(tmp_path / "bad.yaml")
    (tmp_path / "missing.yaml").write_text("scaling: {name: planner, capacity_plan: nope.yaml}\n")
    with pytest.raises(PolicyError, match="scaling.capacity_plan: .*nope.yaml: cannot read"):
        cycle_config(load_policy(tmp_path / "missing.yaml"), SITE_GROUPS)


PLAN_WITH_A_STRANGER = """\
policy: {calendars: []}
plan:
  start: "1970-01-01T00:16:40+00:00"
  hour_s: 3600
  power:
    cpu-arm: [1, 1]
    gpu-b200: [2, 0]
"""


@pytest.fixture
def stranger(tmp_path):
    """A policy whose capacity plan names a group (gpu-b200, line 7) the demo site does not have."""
    (tmp_path / "plan.yaml").write_text(PLAN_WITH_A_STRANGER)
    (tmp_path / "policy.yaml").write_text("scaling: {name: planner, capacity_plan: plan.yaml}\n")
    return tmp_path


def _names_the_file_line_and_groups(message: str, tmp_path) -> None:
    assert f"{tmp_path / 'plan.yaml'}:7: plan.power.gpu-b200: no such node group in the site" in message
    assert ", ".join(SITE_GROUPS) in message


def test_a_plan_naming_a_group_the_site_lacks_is_refused_by_the_cycle(stranger):
    """Live: the cycle's config (also what ActivePolicy builds at start and on every change) refuses it."""
    from slurm_plugin.cycle.active import ActivePolicy
    from slurm_plugin.cycle.policy import cycle_config

    spec = load_policy(stranger / "policy.yaml")
    with pytest.raises(PolicyError) as err:
        cycle_config(spec, SITE_GROUPS)
    _names_the_file_line_and_groups(str(err.value), stranger)
    with pytest.raises(PolicyError) as err:
        ActivePolicy(stranger / "policy.yaml", groups=SITE_GROUPS).refresh()
    _names_the_file_line_and_groups(str(err.value), stranger)


def test_hetsched_cycle_refuses_it_before_touching_slurm(stranger):
    res = CliRunner().invoke(main, ["cycle", "once", "--dry-run", "--site", "demo", "--state-dir",
                                    str(stranger / "state"), "--policy-file", str(stranger / "policy.yaml")])
    assert res.exit_code == 2, res.output
    _names_the_file_line_and_groups(" ".join(res.output.split()), stranger)


def test_the_simulator_refuses_it(stranger):
    """sim run --policy-file (and every replay that builds its scaling from a policy: sim compare, tune)."""
    p = prepare("synthetic:jobs=10,seed=1,load=0.3", "demo")
    with pytest.raises(PolicyError) as err:
        sim_scaling(load_policy(stranger / "policy.yaml").scaling, p.machine, p.workload.jobs)
    _names_the_file_line_and_groups(str(err.value), stranger)
    res = CliRunner().invoke(main, ["sim", "run", "--site", "demo", "-w", "synthetic:jobs=10,seed=1,load=0.3",
                                    "--policy-file", str(stranger / "policy.yaml")])
    assert res.exit_code != 0
    _names_the_file_line_and_groups(" ".join(res.output.split()), stranger)


def test_the_simulator_keeps_the_plans_nodes_on():
    """A plan that keeps every node on for the whole run uses the energy of always-on; without it the planner
    powers idle nodes down and uses less."""
    from slurm_plugin.policy import ScalingSpec

    p = prepare("synthetic:jobs=60,seed=2,load=0.3", "demo")
    last = float(p.workload.jobs.submit.max() + p.workload.jobs.limit.max())
    hours = int(last // 3600) + 2
    doc = plan({g.name: [g.count] * hours for g in p.machine.groups},
               start="1970-01-01T00:00:00+00:00")
    spec = ScalingSpec()
    full = sim_scaling(spec, p.machine, p.workload.jobs)
    full.plan = plan_from_dict(doc)
    on, out_on = simulate(p, "fcfs", power=full)
    always, out_always = simulate(p, "fcfs", power="always-on")
    planner, out_planner = simulate(p, "fcfs", power=sim_scaling(spec, p.machine, p.workload.jobs))
    floor = min(out_always.timeline["watts"])  # every node on, none busy
    assert min(out_on.timeline["watts"]) == floor > min(out_planner.timeline["watts"])
    e = lambda row: row["metrics"]["energy_kwh"]  # noqa: E731
    assert e(on) == pytest.approx(e(always), rel=1e-3)  # (the planner's last tick ends the timeline 10 s later)
    assert e(planner) < e(always) * 0.99


def test_cost_plan_output_is_a_plan_the_planner_reads(tmp_path):
    out = tmp_path / "plan.yaml"
    res = CliRunner().invoke(main, ["cost", "plan", "--site", "demo", "-w", "synthetic:jobs=200,seed=1,load=0.5",
                                    "--horizon", "1d", "--time-limit", "20", "--output", str(out)])
    assert res.exit_code == 0, res.output
    groups = {g.name: g.count for g in SITE.node_groups}
    got = load_capacity_plan(out, groups)
    assert set(got.power) == set(groups) and all(len(h) == 24 for h in got.power.values())
