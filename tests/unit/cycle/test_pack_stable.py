"""Packing is stable under its own application (issue 23): the jobs a cycle moved are pinned where it sent them
(their constraint names the class), so the next cycle counts their capacity there and does not move more jobs
onto the same nodes. Live, before this, the 2,240-node site's cycles moved 541, 256, then 102 different band-5
GPU jobs onto one class that holds 256 (results/cycle/budget/budget10s-2240-10k.json)."""

import dataclasses

from slurm_plugin.cycle.inputs import constrained, packing_jobs
from slurm_plugin.pack import GroupState, Resources
from slurm_plugin.pack.plan import plan_moves
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import GresCount, JobState, Snapshot
from slurm_plugin.snapshot.model import ARCH_FEATURES

SITE = load_site("demo")
GPU1 = (GresCount("gpu", None, 1),)
# the h100 node is free for 4 one-GPU jobs; every other group is full and none is powered down
STATES = {g.name: GroupState(free=Resources(0, 0, 0)) for g in SITE.node_groups}
STATES["gpu-h100"] = GroupState(free=Resources(cpus=72, mem_gb=480, accels=4))


def queue(n: int) -> Snapshot:
    """``n`` one-GPU jobs in ``gpu`` that accept an a100 or an h100 (the user's OR; movable)."""
    return Snapshot(jobs=tuple(JobState(i, "PENDING", partition="gpu", cpus=4, memory_per_node_mb=8192,
                                        time_limit_min=60, gres=GPU1, features="a100|h100",
                                        comment="class=ai-inference") for i in range(1, n + 1)))


def decide(snapshot: Snapshot) -> list:
    moves, _ = plan_moves(packing_jobs(snapshot, SITE, bands={j.job_id: 5 for j in snapshot.jobs}), SITE, STATES,
                          time_cap_s=5.0)
    return moves


def applied(snapshot: Snapshot, moves) -> Snapshot:
    to = {int(m.job_id): m for m in moves}
    return Snapshot(jobs=tuple(
        dataclasses.replace(j, partition=to[j.job_id].partition, features="&".join(to[j.job_id].features))
        if j.job_id in to else j for j in snapshot.jobs))


def test_a_moved_job_is_confined_by_its_constraint():
    assert constrained("aarch64&h100", ARCH_FEATURES) == ("aarch64",)
    assert constrained("aarch64&h100", {"a100", "h100"}) == ("h100",)
    assert constrained("", ARCH_FEATURES) == () and constrained("eu-west", ARCH_FEATURES) == ()
    moved = JobState(1, "PENDING", partition="gpu", cpus=4, gres=GPU1, features="aarch64&h100",
                     comment="class=ai-inference")
    (job,) = packing_jobs(Snapshot(jobs=(moved,)), SITE, bands={})
    assert job.pinned and job.archs == ("aarch64",) and job.accel_types == ("h100",)


def test_the_decision_is_stable_under_its_own_application():
    snap = queue(8)
    first = decide(snap)
    assert [(m.partition, m.features) for m in first] == [("gpu", ("aarch64", "h100"))] * 4
    assert [m.job_id for m in first] == ["1", "2", "3", "4"]  # the most urgent (same band: the oldest)
    after = applied(snap, first)
    assert decide(after) == []  # the four moved hold the h100's capacity: nobody else is sent there
    assert decide(applied(after, decide(after))) == []
