"""Power-cycle a node before other work lands on it after a sensitive job (pure: snapshot -> Decision).

The Epilog drains the node with reason ``hetsched: deploy: wipe after sensitive job N`` (before the node is
released, so nothing else starts there). Then, cycle after cycle, each node moves along these edges, each an
action through the one applier and Slurm's power programs (the site's power backend):

- drained ``wipe after ...``, idle, powered on  -> POWER_DOWN_FORCE (SuspendProgram: the backend powers it
  off) + DRAIN, reason ``hetsched: deploy: wiping ...`` (POWER_DOWN_FORCE clears the drain on 22.05; Slurm
  gives a powering-down node no job, and the drain, restored at once, keeps it out until it is off: measured
  on the real cluster, without it a pending job of its partition was allocated the node as soon as it was
  off; with it the job waits, ReqNodeNotAvail);
- ``wiping``, powered down                      -> UNDRAIN (reason ``hetsched: deploy: wiped ...`` in the journal):
  the node stays off, and Slurm boots it (ResumeProgram: a fresh OS, nothing of the job left in memory or local
  scratch) for the next job that needs it, or the power planner does for its warm pool. Booting it here instead
  (POWER_UP, then DRAIN again until it answers, as before) left a window: Slurm 22.05 drops the drain on
  POWER_UP, and a job allocated the node in the milliseconds before the DRAIN was requeued by it ("DRAIN/FAIL
  request for node ... which is allocated and being powered up. Requeuing jobs", seen in a CI run).

The step runs first in every steering cycle (:class:`slurm_plugin.cycle.wipe_step.WipeStep`; its power actions
win over the power planner's for the same node), with its memory in the cycle's state directory
(:data:`MEMORY_FILE`); ``hetsched deploy wipe`` runs it once by hand, under the same lock.

A node still powering down or booting waits; a job still running (COMPLETING) waits. Should Slurm boot a node
in the ``wiping`` phase anyway (an admin resumed it), that boot completes the cycle too (the node was off), and a
new ``wipe after`` reason starts the sequence again. A node remembered as ``wiped`` (the phase of the earlier
sequence, in an older memory file) is resumed once it is up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from ..decision import Decision, DrainNodes, PowerNodes
from ..decision.actions import TAG, Cause
from ..fsio import load_state, write_file_atomic

PENDING = "deploy: wipe after"
PHASES = ("pending", "wiping", "wiped")
MEMORY_FILE = "wipe.json"  # in the cycle's state directory: node -> [phase, sensitive job]
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


def plan_wipes(snapshot, memory: dict | None = None, cause: Cause = Cause.ISOLATION) -> tuple[Decision, dict]:
    """The next action for every node in the wipe sequence (see the module docstring) and the new memory
    (node -> [phase, job]; the phase is remembered, not read back from the reason: Slurm 22.05 drops a
    powered-up node's reason when a pending job wants it). Pure: the caller persists the memory."""
    memory = {k: list(v) for k, v in (memory or {}).items()}
    actions = []
    for node in snapshot.nodes:
        reason = node.reason.removeprefix(TAG).strip()
        phase, job = memory.get(node.name, [None, ""])
        if reason.startswith(PENDING) and (phase is None or reason.rsplit(" ", 1)[-1] != job):
            phase, job = "pending", reason.rsplit(" ", 1)[-1]  # a new sensitive job ended there
        if phase == "pending":
            if not _powered_down(node) and not _in_transition(node) and node.alloc_cpus == 0:
                actions.append(PowerNodes((node.name,), "POWER_DOWN_FORCE", f"{WIPING} after sensitive job {job}",
                                          cause))
                actions.append(DrainNodes((node.name,), "DRAIN", f"{WIPING} after sensitive job {job}", cause))
                memory[node.name] = ["wiping", job]
        elif phase == "wiping":
            if _powered_down(node):
                actions.append(DrainNodes((node.name,), "UNDRAIN", f"{WIPED} after sensitive job {job}: off, "
                                          "Slurm boots it fresh for its next job", cause))
                memory.pop(node.name, None)
            elif not _in_transition(node):  # Slurm booted it again for a pending job: the cycle is done
                memory.pop(node.name, None)
                if "DRAIN" in " ".join(node.flags).upper() and not reason.startswith(PENDING):
                    actions.append(DrainNodes((node.name,), "RESUME", f"wiped after sensitive job {job}", cause))
        elif phase == "wiped":
            if not _powered_down(node) and not _in_transition(node):
                actions.append(DrainNodes((node.name,), "RESUME", f"wiped after sensitive job {job}", cause))
                memory.pop(node.name, None)
    return Decision(tuple(actions), source="wipe"), memory


def _parse(doc: object) -> dict[str, list[str]]:
    if not isinstance(doc, dict):
        raise TypeError("not an object of node -> [phase, job]")
    out = {}
    for node, entry in doc.items():
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] in PHASES and isinstance(entry[1], str)):
            raise ValueError(f"{node}: expected [phase, job] with phase one of {', '.join(PHASES)}, got {entry!r}")
        out[str(node)] = list(entry)
    return out


def load_wipe_memory(path: str | Path) -> dict[str, list[str]]:
    """Node -> [phase, job]; empty when missing (a damaged file is moved aside, see ``fsio.load_state``)."""
    return load_state(path, _parse, dict, "wipe memory")


def save_wipe_memory(path: str | Path, memory: Mapping[str, list[str]]) -> None:
    write_file_atomic(path, json.dumps(dict(sorted(memory.items()))) + "\n")


def applied_wipe_memory(before: Mapping[str, list[str]], after: Mapping[str, list[str]], results) -> dict:
    """``after`` with every node whose wipe action Slurm did not take set back to its ``before`` entry (else a
    node still powered on would be read as "booted again" next cycle and resumed without its power cycle).
    ``results``: the applier's :class:`~slurm_plugin.decision.applier.Applied` list."""
    failed = {n for r in results if not r.ok and getattr(r.action, "cause", None) == Cause.ISOLATION
              for n in r.action.nodes}
    out = {n: list(v) for n, v in after.items() if n not in failed}
    out.update({n: list(before[n]) for n in failed if n in before})
    return out
