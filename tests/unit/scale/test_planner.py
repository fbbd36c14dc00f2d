"""Power planning on hand-built snapshots of the demo site: what is powered up or down, and why."""

from __future__ import annotations

from dataclasses import replace

import pytest

from slurm_plugin.decision import PowerNodes
from slurm_plugin.scale.planner import GroupLimits, ScaleConfig, ScaleMemory, plan_power
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import GresCount, JobState, NodeState, PartitionState, Snapshot

SITE = load_site("demo")


def node(name, state="idle", flags=(), alloc=0, reason=""):
    g = next(g for g in SITE.node_groups if name in g.hostnames)
    return NodeState(name=name, state=state, flags=tuple(flags), cpus=g.cpu.cores, alloc_cpus=alloc,
                     memory_mb=g.memory_gb * 1024, features=g.all_features,
                     gres=tuple(GresCount(n, t, c) for n, t, c in g.gres), reason=reason,
                     partitions=tuple(p.name for p in SITE.partitions if g.name in p.node_groups))


def snapshot(nodes: dict[str, NodeState], jobs=()) -> Snapshot:
    all_nodes = {h: node(h) for g in SITE.node_groups for h in g.hostnames}
    all_nodes.update(nodes)
    parts = tuple(PartitionState(p.name, tuple(h for gn in p.node_groups for h in SITE.group(gn).hostnames),
                                 default=p.default) for p in SITE.partitions)
    return Snapshot(tuple(all_nodes.values()), parts, tuple(jobs), taken_at=0)


def pending(job_id, partition="", features="", cpus=1, nodes=1, gres=(), submit=900.0):
    return JobState(job_id, "PENDING", partition=partition, features=features, cpus=cpus, node_count=nodes,
                    gres=tuple(gres), reason="Resources", submit_time=submit)


CFG = ScaleConfig(idle_grace_s=300, groups={"cpu-arm": GroupLimits(warm=0)})


def run(snap, memory=ScaleMemory(), now=1000.0, cfg=CFG):
    decision, mem = plan_power(snap, SITE, cfg, memory, now)
    return {(a.action, a.nodes) for a in decision.actions if isinstance(a, PowerNodes)}, mem, decision


def test_idle_nodes_wait_for_the_grace_period_then_go_down_beyond_the_warm_pool():
    snap = snapshot({})
    acts, mem, _ = run(snap, now=1000)
    assert acts == set()  # just became idle
    acts, mem, decision = run(snap, mem, now=1000 + 301)
    downs = {n for a, ns in acts if a == "POWER_DOWN" for n in ns}
    # warm pool 1 everywhere except cpu-arm (0): one node of each multi-node group stays on
    assert downs == {"armn1", "armn2", "armn3", "x86n1"}
    reason = next(a.reason for a in decision.actions if "armn1" in a.nodes)
    assert reason.startswith("cpu-arm: idle >= 300 s; 3 on, 0 busy, want 0")


def test_busy_nodes_are_never_powered_down():
    busy = {"armn1": node("armn1", "mixed", alloc=4), "armn2": node("armn2", "allocated", alloc=64)}
    _, mem, _ = run(snapshot(busy))
    acts, _, _ = run(snapshot(busy), mem, now=5000)
    downs = {n for a, ns in acts if a == "POWER_DOWN" for n in ns}
    assert "armn1" not in downs and "armn2" not in downs and "armn3" in downs


def test_backlog_only_arm_can_serve_powers_arm_nodes_up():
    off = {h: node(h, flags=("powered_down",)) for h in ("armn1", "armn2", "armn3")}
    jobs = [pending(i, features="aarch64", cpus=64) for i in (1, 2)]
    acts, _, decision = run(snapshot(off, jobs))
    assert ("POWER_UP", ("armn1", "armn2")) in acts
    reason = next(a.reason for a in decision.actions if a.action == "POWER_UP")
    assert reason.startswith("cpu-arm: 2 pending job(s) need 2 node(s), 0 idle and 0 booting")


@pytest.mark.parametrize("reason", ["PartitionDown", "PartitionInactive", "QOSGrpCpuLimit", "AssocGrpNodeLimit",
                                    "BeginTime", "Dependency"])
def test_jobs_no_powered_node_can_start_power_nothing_up(reason):
    """A partition that is DOWN (or a limit, or a time) holds the job whatever runs: booting nodes for it only
    burns power (seen on the large live site: 1,088 power-up retries for jobs of DOWN partitions)."""
    off = {h: node(h, flags=("powered_down",)) for h in ("armn1", "armn2", "armn3")}
    jobs = [replace(pending(i, features="aarch64", cpus=64), reason=reason) for i in (1, 2)]
    acts, _, _ = run(snapshot(off, jobs))
    assert not [a for a in acts if a[0] == "POWER_UP"], acts


def test_small_jobs_share_a_node_instead_of_waking_many():
    off = {h: node(h, flags=("powered_down",)) for h in ("armn1", "armn2", "armn3")}
    jobs = [pending(i, features="aarch64", cpus=2) for i in range(1, 6)]
    acts, _, _ = run(snapshot(off, jobs))
    assert acts == {("POWER_UP", ("armn1",))}


def test_flexible_backlog_goes_to_the_cheapest_group():
    off = {h: node(h, flags=("powered_down",)) for h in ("armn1", "armn2", "armn3", "x86n1", "x86n2")}
    acts, _, _ = run(snapshot(off, [pending(1, features="aarch64|x86_64", cpus=8)]))
    ups = {n for a, ns in acts if a == "POWER_UP" for n in ns}
    assert "armn1" in ups  # ARM is cheaper per hour
    # x86 gets neither the job nor its warm pool: portable work is all the demand, so the architecture
    # controller moved x86's warm node to ARM (armn2); with arch=False x86n1 would come up warm
    assert ups == {"armn1", "armn2"}


def test_a_pending_arrays_record_counts_each_of_its_tasks():
    """One record for 2 pending tasks of 64 ARM cores each needs 2 nodes, as 2 separate jobs do."""
    off = {h: node(h, flags=("powered_down",)) for h in ("armn1", "armn2", "armn3")}
    array = replace(pending(1, features="aarch64", cpus=64), array_job_id=1, array_tasks="0-1", task_count=2)
    acts, _, _ = run(snapshot(off, [array]))
    assert ("POWER_UP", ("armn1", "armn2")) in acts


def test_gpu_backlog_counts_gres_not_cpus():
    off = {"a100n1": node("a100n1", flags=("powered_down",))}
    acts, _, _ = run(snapshot(off, [pending(1, partition="gpu", cpus=1, gres=[GresCount("gpu", "a100", 2)])]))
    assert ("POWER_UP", ("a100n1",)) in acts


def test_booting_node_far_past_resume_timeout_is_forced_down_once():
    booting = {"npun1": node("npun1", "idle", flags=("powered_down", "powering_up"))}
    _, mem, _ = run(snapshot(booting), now=0)
    acts, _, _ = run(snapshot(booting), mem, now=SITE.slurm.resume_timeout + 1)
    assert acts == set()  # Slurm marks it DOWN at ResumeTimeout itself; the planner does not race it
    acts, mem, decision = run(snapshot(booting), mem, now=SITE.slurm.resume_timeout + 121)
    assert ("POWER_DOWN_FORCE", ("npun1",)) in acts
    assert mem.power["npun1"].failures == 1 and mem.power["npun1"].state.value == "powering_down"
    slurm_says = {"npun1": node("npun1", "down", flags=("powered_down",), reason="ResumeTimeout reached")}
    acts, _, _ = run(snapshot(slurm_says))
    assert acts == set()  # a fresh failure waits for its backoff before the retry


def test_memory_carries_idle_since_and_forgets_busy_nodes():
    _, mem, _ = run(snapshot({}), now=10)
    assert mem.idle_since["armn1"] == 10
    _, mem, _ = run(snapshot({"armn1": node("armn1", "allocated", alloc=64)}), mem, now=20)
    assert "armn1" not in mem.idle_since and mem.idle_since["armn2"] == 10


@pytest.mark.parametrize("util_alloc,extra", [(64 * 3, True), (0, False)])
def test_pid_adds_headroom_only_when_running_hot(util_alloc, extra):
    nodes = {f"armn{i}": node(f"armn{i}", "allocated", alloc=64) for i in (1, 2)}
    nodes["armn3"] = node("armn3", flags=("powered_down",))
    if not util_alloc:
        nodes = {"armn3": nodes["armn3"]}
    acts, _, _ = run(snapshot(nodes), cfg=replace(CFG, pid=True))
    assert (("POWER_UP", ("armn3",)) in acts) is extra
    acts, _, _ = run(snapshot(nodes))  # PID headroom is opt-in
    assert ("POWER_UP", ("armn3",)) not in acts


def test_a_node_drained_for_a_fault_is_never_powered_up_and_not_counted_as_supply():
    """armn1 is powered down and drained by the health check: the backlog wakes armn2 and armn3, never armn1."""
    off = {h: node(h, flags=("powered_down",)) for h in ("armn1", "armn2", "armn3")}
    off["armn1"] = node("armn1", flags=("drain", "powered_down"), reason="hetsched: health Xid 79: gpu_lost")
    jobs = [pending(i, features="aarch64", cpus=64) for i in (1, 2, 3)]
    acts, _, _ = run(snapshot(off, jobs))
    ups = {n for a, ns in acts if a == "POWER_UP" for n in ns}
    assert ups == {"armn2", "armn3"}
