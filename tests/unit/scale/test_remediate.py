"""The power state machine in use: records synced from Slurm's flags (passive edges), bounded remediation of
failed power-ups (active edges), and the issue-11 loop (a node forced down every cycle) that must not recur."""

from __future__ import annotations

from collections import Counter

import pytest

from slurm_plugin.cycle.decide import one_power_action_per_node
from slurm_plugin.decision import Cause, Decision, PowerNodes
from slurm_plugin.scale.planner import ScaleMemory
from slurm_plugin.scale.power_state import HISTORY_MAX, Event, NodePower, Power
from slurm_plugin.scale.remediate import RetryPolicy, remediate, seen_power, sync_records

from .test_planner import SITE, node, pending, run, snapshot

RT = SITE.slurm.resume_timeout
OURS = "hetsched: rvn1 stuck powering up past ResumeTimeout (300 s); forced down"  # the old planner's text
# 24.11 keeps the power-down reason on a powered-down node and appends its own at ResumeTimeout (seen in trixie)
APPENDED = "hetsched: cpu-riscv: idle >= 0 s; 1 on, 0 busy, want 0 : ResumeTimeout reached"


@pytest.mark.parametrize("state,flags,reason,before,want", [
    ("idle", (), "", None, Power.ON),
    ("idle", ("powered_down",), "", None, Power.OFF),
    ("idle", ("power_down",), "", None, Power.POWERING_DOWN),
    ("idle", ("powering_down",), "", Power.ON, Power.POWERING_DOWN),
    ("idle", ("not_responding", "powering_up"), "", Power.OFF, Power.POWERING_UP),
    ("down", ("powered_down", "not_responding"), "ResumeTimeout reached", None, Power.FAILED),
    ("down", ("powered_down",), "hetsched: resume failed 3 times: ResumeTimeout reached", None, Power.HELD),
    ("down", ("powered_down",), OURS, None, Power.OFF),  # our own text is never a timeout (issue 11)
    ("down", ("powered_down",), "resume failed (redfish): BMC x: HTTP 500", None, Power.FAILED),  # the backend
    ("down", ("powered_down",), "bmc: connection refused", Power.POWERING_UP, Power.FAILED),  # resume program
    ("down", ("powered_down",), "bmc: connection refused", Power.OFF, Power.OFF),
    ("down", ("not_responding",), "Not responding", Power.ON, Power.ON),  # slurmd died: not a power failure
    ("down", ("not_responding", "powering_up"), "", Power.FAILED, Power.POWERING_UP),  # retry under way
    ("down", ("power_up", "powered_down"), "ResumeTimeout reached", Power.POWERING_UP, Power.POWERING_UP),
    ("down", ("powered_down",), APPENDED, Power.POWERING_UP, Power.FAILED),  # 24.11
    ("down", ("powered_down",), APPENDED, None, Power.FAILED),  # 24.11, the memory lost
    ("down", ("powered_down",), "hetsched: retry 1/2 after 1 s: ResumeTimeout reached", Power.OFF, Power.OFF),
    ("down", ("powered_down",), "hetsched: resume failed 3 times: x : ResumeTimeout reached", None, Power.HELD),
])
def test_seen_power(state, flags, reason, before, want):
    seen, why = seen_power(node("rvn1", state, flags, reason=reason), before)
    assert seen == want
    if want == Power.FAILED:  # the error, for the give-up reason: Slurm's part of an appended reason
        assert why == reason.replace("resume failed (redfish): ", "redfish: ").replace(APPENDED, "ResumeTimeout reached")


@pytest.mark.parametrize("before,failures,slurm,want,want_failures", [
    (Power.ON, 0, node("rvn1", flags=("powering_down",)), Power.POWERING_DOWN, 0),
    (Power.POWERING_DOWN, 0, node("rvn1", flags=("powered_down",)), Power.OFF, 0),
    (Power.POWERING_DOWN, 0, node("rvn1", flags=("powering_up",)), Power.POWERING_UP, 0),  # via OFF
    (Power.OFF, 0, node("rvn1", flags=("powering_up",)), Power.POWERING_UP, 0),  # Slurm resumed it for a job
    (Power.POWERING_UP, 1, node("rvn1"), Power.ON, 0),  # booted: the failure count starts again
    (Power.POWERING_UP, 1, node("rvn1", "down", ("powered_down",), reason="ResumeTimeout reached"),
     Power.FAILED, 2),
    (Power.OFF, 0, node("rvn1", "down", ("powered_down",), reason="ResumeTimeout reached"), Power.FAILED, 1),
    (Power.FAILED, 2, node("rvn1", "down", ("powered_down",), reason="ResumeTimeout reached"), Power.FAILED, 2),
    (Power.FAILED, 2, node("rvn1", flags=("powered_down",)), Power.OFF, 0),  # an admin resumed it
    (Power.HELD, 3, node("rvn1", flags=("powered_down",)), Power.OFF, 0),  # an admin resumed it
    (Power.HELD, 3, node("rvn1", "down", ("powered_down",), reason="hetsched: resume failed 3 times: x"),
     Power.HELD, 3),
])
def test_sync_follows_slurm(before, failures, slurm, want, want_failures):
    rec = NodePower("rvn1", before, 0.0, failures=failures)
    (after,) = sync_records([slurm], {"rvn1": rec}, 10.0, RT, RetryPolicy()).values()
    assert (after.state, after.failures) == (want, want_failures)
    assert all(c.cause.startswith("Slurm shows") or c.cause.startswith("ResumeTimeout") for c in after.history)


@pytest.mark.parametrize("failures,age,flags,want", [
    (1, 59, ("powered_down",), None),  # backoff 60 s not over
    (1, 60, ("powered_down",), ("POWER_UP", Cause.RETRY)),
    (2, 119, ("powered_down",), None),  # backoff doubles
    (2, 120, ("powered_down",), ("POWER_UP", Cause.RETRY)),
    (3, 0, ("powered_down",), ("DOWN", Cause.GIVE_UP)),  # retries used up: at once
    (1, 0, ("powering_up",), ("POWER_DOWN_FORCE", Cause.STUCK_BOOT)),  # our own stuck-boot timeout
])
def test_remediation_decisions(failures, age, flags, want):
    rec = NodePower("rvn1", Power.FAILED, 100.0, failures=failures, last_error="ResumeTimeout reached")
    shown = {"rvn1": node("rvn1", "down", flags, reason="ResumeTimeout reached")}
    actions, after = remediate({"rvn1": rec}, shown, 100.0 + age, RetryPolicy(max_retries=2, backoff_s=60))
    assert [(a.action, a.cause) for a in actions] == ([want] if want else [])
    if want and want[1] == Cause.GIVE_UP:
        assert actions[0].reason == "resume failed 3 times: ResumeTimeout reached"
        assert after["rvn1"].state == Power.HELD


def test_held_and_failed_nodes_are_never_planned_for():
    for reason in ("hetsched: resume failed 3 times: x", "ResumeTimeout reached"):
        stuck = {"rvn1": node("rvn1", "down", ("powered_down",), reason=reason)}
        acts, _, _ = run(snapshot(stuck, [pending(1, partition="riscv", cpus=4)]), now=1000)
        assert not any("rvn1" in ns for _, ns in acts), acts


def test_our_own_reason_is_not_a_stuck_node():
    """Issue 11: the planner matched "ResumeTimeout" in its own POWER_DOWN_FORCE reason, forcing the node down
    every cycle and powering it up in the same cycle."""
    theirs = {"rvn1": node("rvn1", "down", ("powered_down",), reason=OURS)}
    memory = ScaleMemory()
    for t in range(0, 600, 30):
        acts, memory, _ = run(snapshot(theirs, [pending(1, partition="riscv", cpus=4)]), memory, now=1000 + t)
        assert not any(a == "POWER_DOWN_FORCE" for a, _ in acts)


def test_a_node_that_never_boots_is_retried_twice_then_left_down_until_an_admin_resumes_it():
    job = [pending(1, partition="riscv", cpus=4)]
    off = node("rvn1", flags=("powered_down",))
    booting = node("rvn1", flags=("powered_down", "not_responding", "powering_up"))
    timed_out = node("rvn1", "down", ("powered_down", "not_responding"), reason="ResumeTimeout reached")
    memory, t, seen, actions = ScaleMemory(), 1000.0, off, Counter()
    for _ in range(200):  # a cycle every 10 s; Slurm's view follows the planner's POWER_UP and ResumeTimeout
        _, memory, decision = run(snapshot({"rvn1": seen}, job), memory, now=t)
        mine = [a for a in decision.actions if "rvn1" in a.nodes]
        assert len(mine) <= 1, mine
        actions.update((a.action, a.cause) for a in mine)
        rec = memory.power["rvn1"]
        if any(a.action == "POWER_UP" for a in mine):
            seen, up_at = booting, t
        elif seen is booting and t - up_at >= RT:
            seen = timed_out
        elif any(a.action == "DOWN" for a in mine):
            seen = node("rvn1", "down", ("powered_down",), reason="hetsched: " + mine[0].reason)
        t += 10
    assert actions == {("POWER_UP", Cause.BACKLOG): 1, ("POWER_UP", Cause.RETRY): 2, ("DOWN", Cause.GIVE_UP): 1}
    assert rec.state == Power.HELD and rec.failures == 3 and rec.last_error == "ResumeTimeout reached"
    assert [c.event for c in rec.history][-2:] == [Event.TIMED_OUT, Event.GIVE_UP]
    assert len(rec.history) <= HISTORY_MAX
    # an admin resumes it (scontrol update state=RESUME): off and usable, the backlog powers it up again
    acts, memory, _ = run(snapshot({"rvn1": off}, job), memory, now=t)
    assert ("POWER_UP", ("rvn1",)) in acts and memory.power["rvn1"].failures == 0


def test_guard_keeps_one_power_action_per_node():
    decision = Decision((PowerNodes(("n1",), "POWER_UP", "retry", Cause.RETRY),
                         PowerNodes(("n1", "n2"), "POWER_DOWN", "idle", Cause.IDLE_GRACE),
                         PowerNodes(("n1",), "POWER_DOWN_FORCE", "stuck", Cause.STUCK_BOOT)), "scale")
    kept = one_power_action_per_node(decision).actions
    assert [(a.action, a.nodes) for a in kept] == [("POWER_UP", ("n1",)), ("POWER_DOWN", ("n2",))]


def test_the_simulator_codes_its_node_states_with_the_same_enum():
    from slurm_plugin.sim.power import BOOTING, OFF, ON, SHUTTING, power_of

    assert (ON, OFF, BOOTING, SHUTTING) == (0, 1, 2, 3)  # the codes the engine's arrays hold, unchanged
    assert [power_of(c) for c in (ON, OFF, BOOTING, SHUTTING)] == [
        Power.ON, Power.OFF, Power.POWERING_UP, Power.POWERING_DOWN]
