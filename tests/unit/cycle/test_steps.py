"""decide() over the cycle steps: which steps run, in which order, what each sees and returns (case table)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from slurm_plugin.cycle.decide import CycleConfig, CycleMemory, decide
from slurm_plugin.cycle.steps import STEPS, CycleStep, StepInputs, make_step, register_step, run_steps
from slurm_plugin.decision import Decision, MoveJob, PowerNodes, SetSiteFactor
from slurm_plugin.scale.planner import ScaleMemory

from .builders import SITE, demo_node, demo_snapshot, waiting

FULL_X86 = dict(x86n1=demo_node("x86n1", "allocated", alloc=16), x86n2=demo_node("x86n2", "allocated", alloc=16))
FLEX = waiting(1, features="x86_64", cpus=4, comment="hetsched:class=web,flex=aarch64|x86_64")  # admission's
PINNED = waiting(2, features="x86_64", cpus=4)
ARM_IDLE_SINCE = CycleMemory(ScaleMemory(idle_since={"armn1": 0.0, "armn2": 0.0, "armn3": 0.0}, last_t=0.0))


def top_first(snapshot, site, now) -> Decision:
    """A ranker: job 2 above job 1."""
    return Decision((SetSiteFactor((2,), 200, "top"), SetSiteFactor((1,), 100, "second")), "rank:test")


def flex_first(snapshot, site, now) -> Decision:
    """A ranker: job 1 above job 2."""
    return Decision((SetSiteFactor((1,), 300, "top"), SetSiteFactor((2,), 100, "second")), "rank:test")


def summary(decision: Decision) -> list[tuple]:
    out = []
    for a in decision.actions:
        if isinstance(a, SetSiteFactor):
            out.append(("site_factor", a.job_ids, a.site_factor))
        elif isinstance(a, MoveJob):
            out.append(("move", a.job_id, a.features))
        elif isinstance(a, PowerNodes):
            out.append((a.action, a.nodes))
    return out


CASES = {
    # name: (config, ranker, now, steps run, source, actions)
    "all off": (CycleConfig(pack=False, reshape=False, power=False), None, 400.0, ["rank"], "rank:off", []),
    "rank only": (CycleConfig(pack=False, reshape=False, power=False), top_first, 400.0, ["rank"], "rank:test",
                  [("site_factor", (2,), 200), ("site_factor", (1,), 100)]),
    "pack moves the flexible job, not the pinned one": (
        CycleConfig(reshape=False, power=False), None, 400.0, ["rank", "pack"], "rank:off+pack",
        [("move", 1, "aarch64")]),
    "rank then pack": (
        CycleConfig(reshape=False, power=False), top_first, 400.0, ["rank", "pack"], "rank:test+pack",
        [("site_factor", (2,), 200), ("site_factor", (1,), 100), ("move", 1, "aarch64")]),
    "power: idle arm nodes past the grace go down, one stays warm": (
        CycleConfig(pack=False, reshape=False), None, 400.0, ["rank", "power"], "rank:off+scale",
        [("POWER_DOWN", ("armn1", "armn2"))]),
    "power: within the grace nothing goes down": (
        CycleConfig(pack=False, reshape=False), None, 200.0, ["rank", "power"], "rank:off+scale", []),
    "every step, in order": (
        CycleConfig(), None, 400.0, ["rank", "pack", "reshape", "power"], "rank:off+pack+reshape+scale",
        [("move", 1, "aarch64"), ("POWER_DOWN", ("armn1", "armn2"))]),
    "the order a policy file's steps: gives, switched-off steps skipped": (
        CycleConfig(pack=False, reshape=False, steps=("power", "reshape", "rank", "pack")), top_first, 400.0,
        ["power", "rank"], "scale+rank:test",
        [("POWER_DOWN", ("armn1", "armn2")), ("site_factor", (2,), 200), ("site_factor", (1,), 100)]),
    "pack before rank sees no bands yet, still moves the flexible job": (
        CycleConfig(reshape=False, power=False, steps=("pack", "rank")), flex_first, 400.0, ["pack", "rank"],
        "pack+rank:test", [("move", 1, "aarch64"), ("site_factor", (1,), 300), ("site_factor", (2,), 100)]),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_decide_runs_the_configured_steps(case):
    config, ranker, now, steps, source, want = CASES[case]
    decision, memory = decide(demo_snapshot([FLEX, PINNED], **FULL_X86), SITE, config, ARM_IDLE_SINCE, now, ranker)
    assert [name for name, _ in decision.timings] == ["wipe", *steps]  # the wipe step always runs first
    assert all(t >= 0 for _, t in decision.timings)
    assert decision.source == source
    assert summary(decision) == want
    assert (memory.scale.last_t == now) == ("power" in steps)  # only the power step changes the memory


@dataclass(frozen=True)
class Recorder:
    """A step that records what it saw (a new capability as a step)."""

    seen: list
    name: str = "recorder"

    def decide(self, inputs: StepInputs, memory: CycleMemory) -> tuple[Decision, CycleMemory]:
        self.seen.append([(name, len(d.actions)) for name, d in inputs.earlier])
        return Decision((), "recorder"), memory


def test_later_steps_see_earlier_decisions_and_bands_reach_packing():
    seen: list = []
    register_step("recorder", Recorder)
    try:
        steps: tuple[CycleStep, ...] = (make_step("rank", ranker=flex_first), make_step("recorder", seen=seen),
                                        make_step("pack", time_cap_s=1.0), make_step("recorder", seen=seen))
    finally:
        del STEPS["recorder"]
    decision, _ = run_steps(steps, demo_snapshot([FLEX, PINNED], **FULL_X86), SITE, CycleMemory(), 400.0)
    assert seen == [[("rank", 2)], [("rank", 2), ("recorder", 0), ("pack", 1)]]
    move = next(a for a in decision.actions if isinstance(a, MoveJob))
    assert move.reason.startswith("pack (optimal, gap 0.0%): band 7 web")  # job 1: the top of two bands
    assert dict(decision.notes) == {"pack.status": "optimal", "pack.gap": 0.0}  # what the cycle's metrics read


def test_step_registry_lists_valid_names_and_arguments():
    with pytest.raises(ValueError, match=r"unknown cycle step 'health' \(valid: dag, guard, pack, power, rank, reshape\)"):
        make_step("health")
    with pytest.raises(ValueError, match=r"'pack': unknown argument\(s\) cap \(valid: time_cap_s\)"):
        make_step("pack", cap=2.0)


def test_every_action_of_every_step_carries_a_typed_cause():
    from slurm_plugin.cycle.policy import live_ranker
    from slurm_plugin.decision import Cause
    from slurm_plugin.policy import RankingSpec

    old = waiting(3, cpus=2, submit=-100000.0)  # past the 24 h age floor at t=400
    snap = demo_snapshot([FLEX, PINNED, old], **FULL_X86)
    decision, _ = decide(snap, SITE, CycleConfig(), ARM_IDLE_SINCE, 400.0, live_ranker(RankingSpec("sjf")))
    causes = {(a.kind, a.cause) for a in decision.actions}
    assert causes == {("site_factor", Cause.AGE_FLOOR), ("site_factor", Cause.RANKING), ("move_job", Cause.PACKING),
                      ("power", Cause.IDLE_GRACE)}, causes
    assert all("sjf level" in a.reason for a in decision.actions if a.cause == Cause.RANKING)


def test_the_wipe_step_runs_first_in_every_cycle_and_its_power_action_wins():
    """A node the Epilog drained after a sensitive job is powered off by the cycle itself (no separate
    process), before the planner's plan: its POWER_DOWN_FORCE stands, the planner's action on it is dropped."""
    from slurm_plugin.decision import Cause
    from slurm_plugin.deploy.wipe import drain_reason

    drained = dataclasses.replace(demo_node("armn1", "idle", flags=("DRAIN",)), reason=drain_reason(42))
    decision, memory = decide(demo_snapshot([], **FULL_X86, armn1=drained), SITE,
                              CycleConfig(pack=False, reshape=False), ARM_IDLE_SINCE, 400.0)
    assert [name for name, _ in decision.timings] == ["wipe", "rank", "power"]
    power = [(a.action, a.nodes, a.cause) for a in decision.actions if isinstance(a, PowerNodes)]
    assert power[0] == ("POWER_DOWN_FORCE", ("armn1",), Cause.ISOLATION)
    assert all("armn1" not in nodes for _, nodes, cause in power[1:])
    assert dict(memory.wipe) == {"armn1": ["wiping", "42"]}
    # the next cycle, the node off: undrained and left off (Slurm boots it fresh for its next job)
    off = dataclasses.replace(drained, reason="", flags=("DRAIN", "POWERED_DOWN"))
    decision, memory = decide(demo_snapshot([], **FULL_X86, armn1=off), SITE, CycleConfig(pack=False, reshape=False,
                              power=False), memory, 410.0)
    assert [a.action for a in decision.actions] == ["UNDRAIN"] and "armn1" not in memory.wipe
    # switched off (a test or a site without sensitive work that wants none of it): no wipe step at all
    decision, _ = decide(demo_snapshot([], armn1=drained), SITE, CycleConfig(pack=False, reshape=False, power=False,
                                                                           wipe=False), CycleMemory(), 400.0)
    assert [name for name, _ in decision.timings] == ["rank"] and not decision.actions


def test_wipe_memory_of_an_action_slurm_refused_is_not_advanced(tmp_path):
    """A POWER_DOWN_FORCE Slurm refused leaves the node 'pending': remembered as 'wiping', the next cycle would
    read the node (still on) as booted again and resume it without its power cycle."""
    from slurm_plugin.decision import Cause, DrainNodes
    from slurm_plugin.decision.applier import Applied
    from slurm_plugin.deploy.wipe import applied_wipe_memory, load_wipe_memory, save_wipe_memory

    down = PowerNodes(("n1",), "POWER_DOWN_FORCE", "wiping", Cause.ISOLATION)
    drain = DrainNodes(("n2",), "DRAIN", "wiping", Cause.ISOLATION)
    after = {"n1": ["wiping", "7"], "n2": ["wiping", "8"]}
    got = applied_wipe_memory({"n1": ["pending", "7"]}, after, [Applied(down, False, "refused"), Applied(drain, True)])
    assert got == {"n1": ["pending", "7"], "n2": ["wiping", "8"]}
    save_wipe_memory(tmp_path / "wipe.json", got)
    assert load_wipe_memory(tmp_path / "wipe.json") == got
    (tmp_path / "wipe.json").write_text('{"n1": ["rebooting", "7"]}')
    assert load_wipe_memory(tmp_path / "wipe.json") == {}  # unusable: moved aside, the reasons start it again


@pytest.mark.parametrize("how", [dict(reason="JobHeldUser", priority=0), dict(reason="JobHeldAdmin", priority=0),
                                 dict(reason="JobHoldMaxRequeue", priority=0), dict(reason="None", priority=0)])
def test_a_held_job_is_never_ranked_nor_moved_whatever_a_step_says(how):
    """Holds as 22.05 and 24.11 show them (a hold reason, priority 0): the ranker and packing both name the
    flexible job 1; held, it gets neither, and the other job keeps its SiteFactor."""
    held = dataclasses.replace(FLEX, **how)
    assert held.held and not FLEX.held and not PINNED.held
    decision, _ = decide(demo_snapshot([held, PINNED], **FULL_X86), SITE, CycleConfig(reshape=False, power=False),
                         ARM_IDLE_SINCE, 400.0, flex_first)
    assert summary(decision) == [("site_factor", (2,), 100)]


def test_a_held_job_is_left_out_of_the_rankings_queue():
    from slurm_plugin.rank.dqn.live import queue_arrays

    held = dataclasses.replace(FLEX, reason="JobHeldUser", priority=0)
    assert queue_arrays(demo_snapshot([held, PINNED]), with_able=False)["ids"].tolist() == [2]


def test_a_pending_arrays_record_is_named_to_slurm_by_its_tasks():
    """One record for array 30's 97 pending tasks (tasks 3 and 1 have their own records, 31 and 32; task 101
    kept the array's id in another array, 40): the ranker names ids, the applier's commands the records and
    nothing more, the tasks with records of their own of one array in one reference (one RPC)."""
    from slurm_plugin.decision.applier import commands_for

    array = dataclasses.replace(PINNED, job_id=30, array_job_id=30, array_tasks="4-100", task_count=97)
    split = dataclasses.replace(PINNED, job_id=31, array_job_id=30, array_task_id=3)
    split1 = dataclasses.replace(PINNED, job_id=32, array_job_id=30, array_task_id=1)
    kept = dataclasses.replace(PINNED, job_id=40, array_job_id=40, array_task_id=101)

    def ranker(snapshot, site, now):
        return Decision((SetSiteFactor((30, 31, 40, 2, 32), 100, "all"),), "rank:test")

    decision, _ = decide(demo_snapshot([array, split, split1, kept, PINNED]), SITE,
                         CycleConfig(pack=False, reshape=False, power=False), CycleMemory(), 400.0, ranker)
    assert [c[2] for a in decision.actions for c in commands_for(a)] == ["jobid=30_[4-100],30_[1,3],40_101,2"]


def test_a_pending_array_record_too_long_to_name_is_left_unchanged(caplog):
    """A stepped array of 50,000 pending tasks (1-99999:2) is one record whose task list (~290 KB) no scontrol
    argument takes: the band and the move leave it out (logged), before the cycle's memory, and keep every other
    job."""
    from slurm_plugin.decision.applier import commands_for

    tasks = "1-99999:2"
    big = dataclasses.replace(PINNED, job_id=50, array_job_id=50, array_tasks=tasks, task_count=50_000)
    small = dataclasses.replace(PINNED, job_id=60, array_job_id=60, array_tasks="4-100", task_count=97)

    def ranker(snapshot, site, now):
        return Decision((SetSiteFactor((50, 2, 60), 100, "all"), SetSiteFactor((50,), 200, "big alone"),
                         MoveJob(50, "gpu", None, "move it")), "rank:test")

    with caplog.at_level("WARNING"):
        decision, memory = decide(demo_snapshot([big, small, PINNED]), SITE,
                                  CycleConfig(pack=False, reshape=False, power=False), CycleMemory(), 400.0, ranker)
    assert [c[2] for a in decision.actions for c in commands_for(a)] == ["jobid=2,60_[4-100]"]
    assert memory.site_factors == {2: 100, 60: 100}  # nothing counts as set on 50: the next cycle tries again
    said = [r.getMessage() for r in caplog.records if "its pending array record's task list is" in r.getMessage()]
    assert len(said) == 3 and "SiteFactor 100 not set on job(s) 50:" in said[0], said
    assert "job 50 not moved to gpu:" in said[2], said

