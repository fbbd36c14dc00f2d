"""The break-even warm pool, the shared group power step and the architecture controller: pure tables, then the
planner on the demo site (the controller's shift shows in plan_power's actions and reasons)."""

from __future__ import annotations

import math

import pytest

from slurm_plugin.decision import PowerNodes
from slurm_plugin.scale.arch import ArchGroup, plan_arch, warm_after
from slurm_plugin.scale.planner import ScaleConfig, ScaleMemory, plan_power
from slurm_plugin.scale.warm import breakeven_gap_s, group_power, warm_target
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import JobState

from .test_planner import node, snapshot

SITE = load_site("demo")


@pytest.mark.parametrize("rate_per_h,idle_w,boot_s,nodes,warm,grace", [
    (6, 500, 180, 1, 0, 30),  # GPU, break-even 540 s, 0.9 jobs expected: goes down after the minimum grace
    (12, 500, 180, 1, 1, 540),  # 1.8 expected: one warm, idle nodes wait the break-even gap out
    (12, 60, 60, 3, 3, 1060),  # ARM: cheap to keep on, 3.5 expected, capped at the group's 3 nodes
    (0, 60, 60, 3, 0, 30),  # a quiet group: everything goes down quickly (night, weekend)
])
def test_warm_target_table(rate_per_h, idle_w, boot_s, nodes, warm, grace):
    t = warm_target(rate_per_h / 3600, idle_w, boot_s, nodes, wait_price_w=1000, min_grace_s=30)
    assert (t.warm, round(t.grace_s)) == (warm, grace)
    assert "jobs/h" in t.reason


def test_breakeven_gap_and_bad_input():
    assert breakeven_gap_s(500, 180, 1000) == pytest.approx(540)
    assert breakeven_gap_s(0, 60, 1000) == math.inf  # a node that draws nothing idle never pays to power down
    with pytest.raises(ValueError, match="rate=-1"):
        warm_target(-1, 100, 60, 2, 1000, 30)


@pytest.mark.parametrize("busy,idle_for,booting,off,extra,grace,up,down", [
    (2, [10, 500, 400], 0, 1, 1, 300, 0, (1, 2)),  # one warm (the latest idle) stays, longest idle first
    (2, [10, 500, 100], 0, 1, 1, 300, 0, (1,)),  # surplus of 2, but one is not idle past the grace
    (2, [10, 50], 0, 1, 0, 300, 0, ()),  # nothing idle long enough
    (0, [], 1, 3, 3, 300, 2, ()),  # refill: 1 booting, 2 more up
    (1, [], 0, 0, 5, 300, 0, ()),  # wants more than exist: nothing to power up
])
def test_group_power_table(busy, idle_for, booting, off, extra, grace, up, down):
    step = group_power(busy, idle_for, booting, off, extra, grace)
    assert (step.up, step.down) == (up, down)


X86 = ArchGroup("cpu-x86", "x86_64", 16, 0.80, 350, warm=1, room=1)
ARM = ArchGroup("cpu-arm", "aarch64", 64, 0.55, 200, warm=0, room=3)


@pytest.mark.parametrize("portable,pinned,moved", [(80, 20, True), (50, 50, True), (20, 80, False), (0, 0, False)])
def test_arch_shift_only_when_portable_work_dominates(portable, pinned, moved):
    shifts = plan_arch([X86, ARM], portable, pinned, dominance=0.5)
    assert bool(shifts) is moved
    if moved:
        (s,) = shifts
        assert (s.source, s.target, s.nodes_out, s.nodes_in) == ("cpu-x86", "cpu-arm", 1, 1)
        assert "cpu-arm (aarch64)" in s.reason and f"{portable / (portable + pinned):.0%}" in s.reason
        assert warm_after(shifts, {"cpu-x86": 1, "cpu-arm": 0}) == {"cpu-x86": 0, "cpu-arm": 1}


def test_arch_target_is_cheapest_per_core_by_cost_and_energy():
    dear_arm = ArchGroup("cpu-arm", "aarch64", 8, 3.0, 400, warm=1, room=2)  # few cores, dear: x86 wins
    (s,) = plan_arch([X86, dear_arm], 90, 10)
    assert (s.source, s.target) == ("cpu-arm", "cpu-x86")
    assert s.nodes_in == 1  # 8 cores fit on one 16-core node
    assert plan_arch([X86], 90, 10) == []  # one architecture: nothing to shift
    with pytest.raises(ValueError, match="dominance"):
        plan_arch([X86, ARM], 1, 1, dominance=0)


def _portable(job_id, cpus, running=False, submit=900.0):
    return JobState(job_id, "RUNNING" if running else "PENDING", features="aarch64|x86_64", cpus=cpus,
                    node_count=1, reason="" if running else "Priority",
                    nodes="armn1" if running else "", submit_time=submit)


def test_planner_moves_the_x86_warm_pool_to_arm_when_portable_work_dominates():
    nodes = {h: node(h, flags=("powered_down",)) for h in ("armn2", "armn3", "x86n1", "x86n2")}
    nodes["armn1"] = node("armn1", "mixed", alloc=8)
    jobs = [_portable(1, 8, running=True)]
    cfg = ScaleConfig(idle_grace_s=300)  # warm pool 1 everywhere
    decision, _ = plan_power(snapshot(nodes, jobs), SITE, cfg, ScaleMemory(), 1000.0)
    ups = {n: a.reason for a in decision.actions if isinstance(a, PowerNodes) and a.action == "POWER_UP"
           for n in a.nodes}
    assert "x86n1" not in ups and "armn2" in ups and "armn3" in ups  # ARM: its own warm node plus x86's
    assert "portable work is 100% of CPU demand" in ups["armn2"]
    off = ScaleConfig(idle_grace_s=300, arch=False)
    decision, _ = plan_power(snapshot(nodes, jobs), SITE, off, ScaleMemory(), 1000.0)
    ups = {n for a in decision.actions if isinstance(a, PowerNodes) and a.action == "POWER_UP" for n in a.nodes}
    assert "x86n1" in ups and "armn3" not in ups
    # demand is what was submitted within the window (as in the simulator): the same job submitted before it
    # is no demand, so nothing moves
    decision, _ = plan_power(snapshot(nodes, [_portable(1, 8, running=True, submit=1000.0 - 7300)]), SITE, cfg,
                             ScaleMemory(), 1000.0)
    ups = {n for a in decision.actions if isinstance(a, PowerNodes) and a.action == "POWER_UP" for n in a.nodes}
    assert "x86n1" in ups and "armn3" not in ups


def test_planner_with_a_wait_price_keeps_a_busy_group_warm_and_powers_a_quiet_one_down():
    jobs = [JobState(i, "RUNNING", partition="arm", features="aarch64", cpus=1, node_count=1, nodes="armn1",
                     submit_time=900 - i) for i in range(1, 30)]  # 29 ARM jobs in the last 2 h
    nodes = {"armn1": node("armn1", "mixed", alloc=29)}
    cfg = ScaleConfig(wait_price_w=1000, min_grace_s=30, arch=False)
    _, mem = plan_power(snapshot(nodes, jobs), SITE, cfg, ScaleMemory(), 1000.0)
    decision, _ = plan_power(snapshot(nodes, jobs), SITE, cfg, mem, 1100.0)
    downs = {n: a.reason for a in decision.actions if a.action == "POWER_DOWN" for n in a.nodes}
    assert "armn2" not in downs and "armn3" not in downs  # 14.5 jobs/h x 1060 s: both idle ARM nodes stay warm
    assert "x86n1" in downs and "x86n2" in downs  # no x86 arrivals: down after 30 s
    assert "0.0 jobs/h" in downs["x86n1"]


def test_portable_demand_in_the_simulator_reads_the_window_of_submitted_jobs():
    from slurm_plugin.sim.scaling import PortableDemand
    from slurm_plugin.sim.machine import GroupSpec

    from ..sim.helpers import jobs, machine

    m = machine(GroupSpec("x86", 2, "x86_64", cores=16), GroupSpec("arm", 3, "aarch64", cores=64),
                GroupSpec("gpu", 1, "x86_64", cores=32, gres={("gpu", "a100"): 4}))
    js = jobs(dict(submit=0, run=60, cores=8, arch=("x86_64", "aarch64")),  # portable, before the window
              dict(submit=5000, run=60, cores=4, arch=("x86_64", "aarch64")),  # portable
              dict(submit=6000, run=60, cores=2, arch=("aarch64",)),  # pinned to ARM
              dict(submit=6500, run=60, cores=1, gres=("gpu", "a100", 1)))  # a GPU job: neither
    demand = PortableDemand(m, js, window_s=3600)
    assert demand.at(7000) == (4.0, 2.0, [0, 1])  # x86 and arm: the CPU groups every portable job may use
    assert demand.at(100) == (8.0, 0.0, [0, 1])
    assert demand.at(20000) == (0.0, 0.0, [])
