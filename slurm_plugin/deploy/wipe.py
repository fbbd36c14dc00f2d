"""Power-cycle a node before other work lands on it after a sensitive job (pure: snapshot -> Decision).

The Epilog drains the node with reason ``hetsched: deploy: wipe after sensitive job N`` (before the node is
released, so nothing else starts there). Then, cycle after cycle, each node moves along these edges, each an
action through the one applier and Slurm's power programs (the site's power backend):

- drained ``wipe after ...``, idle, powered on  -> POWER_DOWN_FORCE (SuspendProgram: the backend powers it
  off), reason ``hetsched: deploy: wiping ...``;
- ``wiping``, powered down                      -> DRAIN reason ``hetsched: deploy: wiped ...`` + POWER_UP
  (ResumeProgram boots it: a fresh OS, nothing of the job left in memory or local scratch);
- ``wiped``, powered on and responding          -> RESUME (other work may land again).

A node still powering down or booting waits; a job still running (COMPLETING) waits.
"""

from __future__ import annotations

from ..decision import Decision, DrainNodes, PowerNodes
from ..decision.actions import TAG, Cause

PENDING = "deploy: wipe after"
WIPING = "deploy: wiping"
WIPED = "deploy: wiped"


def drain_reason(job_id: int | str) -> str:
    """The reason the Epilog drains with (the scontrol form: tagged)."""
    return f"{TAG} {PENDING} sensitive job {job_id}"


def _powered_down(node) -> bool:
    text = " ".join([node.state, *node.flags]).upper()
    return "POWERED_DOWN" in text or ("POWER_DOWN" in text and "POWERING" not in text and "IDLE" in text
                                       and "~" in node.state)


def _in_transition(node) -> bool:
    text = " ".join([node.state, *node.flags]).upper()
    return any(s in text for s in ("POWERING_DOWN", "POWERING_UP", "POWER_DOWN", "COMPLETING", "NOT_RESPONDING"))


def plan_wipes(snapshot, cause: Cause = Cause.ISOLATION) -> Decision:
    """The next action for every node in the wipe sequence (see the module docstring)."""
    actions = []
    for node in snapshot.nodes:
        reason = node.reason.removeprefix(TAG).strip()
        job = reason.rsplit(" ", 1)[-1] if reason.startswith("deploy:") else ""
        if reason.startswith(PENDING):
            if not _powered_down(node) and not _in_transition(node) and node.alloc_cpus == 0:
                actions.append(PowerNodes((node.name,), "POWER_DOWN_FORCE", f"{WIPING} after sensitive job {job}",
                                          cause))
        elif reason.startswith(WIPING):
            if _powered_down(node):
                actions.append(DrainNodes((node.name,), "DRAIN", f"{WIPED} after sensitive job {job}", cause))
                actions.append(PowerNodes((node.name,), "POWER_UP", f"{WIPED} after sensitive job {job}", cause))
        elif reason.startswith(WIPED):
            if not _powered_down(node) and not _in_transition(node):
                actions.append(DrainNodes((node.name,), "RESUME", f"wiped after sensitive job {job}", cause))
    return Decision(tuple(actions), source="wipe")
