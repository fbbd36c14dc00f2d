"""Power records kept in sync with Slurm, and bounded remediation of failed power-ups (pure).

Each cycle first syncs every node's :class:`~.power_state.NodePower` from what Slurm shows (passive edges:
:func:`seen_power`, :func:`sync_records`), then :func:`remediate` acts on failed power-ups:

* a node Slurm marked DOWN after a power-up ("ResumeTimeout reached", or DOWN with a reason its resume program
  set) is retried (``POWER_UP``, cause RETRY) after ``backoff_s * 2**(failures-1)``, at most ``max_retries``
  times; then it is left DOWN with ``hetsched: resume failed N times: <error>`` (cause GIVE_UP) and never
  touched again until an admin (``scontrol update state=RESUME``) or a health check clears it;
* a node still powering up ``stuck_slack_s`` past ResumeTimeout (Slurm should have marked it long ago; it
  checks about every 10 s) is forced down (``POWER_DOWN_FORCE``, cause STUCK_BOOT); that counts as a failure too.

The suite's own reasons never look like Slurm's: only Slurm's "ResumeTimeout reached" as the whole reason's
start (22.05) or appended by Slurm after " : " (24.11 keeps the reason the node had, e.g. the suite's power-down
reason, and appends its own) counts as a timeout, and reasons starting with
:data:`~slurm_plugin.decision.actions.TAG` are otherwise the suite's (issue 11: its own "stuck ... past
ResumeTimeout" text made it force a node down every cycle).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..decision import Cause, PowerNodes
from ..decision.actions import TAG
from ..snapshot import NodeState
from .power_state import Event, NodePower, Power, observed, sync

SLURM_TIMEOUT = "ResumeTimeout reached"
SLURM_APPENDED = " : "  # how Slurm 24.11 adds its own reason to one already set (set_node_reason)
# what `hetsched power resume` sets when a backend fails (power/mark_down.py): "resume failed (redfish): <error>"
BACKEND_FAILED = re.compile(r"resume failed \(([\w.-]+)\): ")
GIVE_UP_TEXT = "resume failed"
HELD = re.compile(rf"{re.escape(TAG)} {GIVE_UP_TEXT} \d+ times: ")  # the give-up reason below


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed power-up is retried: ``max_retries`` retries, the k-th after ``backoff_s * 2**(k-1)``
    seconds; a boot lasting ``stuck_slack_s`` longer than ResumeTimeout is forced down."""

    max_retries: int = 2
    backoff_s: float = 60.0
    stuck_slack_s: float = 120.0

    def backoff(self, failures: int) -> float:
        return self.backoff_s * 2 ** max(failures - 1, 0)


def slurm_timeout(reason: str) -> str | None:
    """Slurm's "ResumeTimeout reached" in ``reason`` (the text from it on), or None: the whole reason's start
    (22.05), or the last part Slurm appended after " : " to a reason already there (24.11:
    "hetsched: <power-down reason> : ResumeTimeout reached")."""
    if reason.startswith(SLURM_TIMEOUT):
        return reason
    head, sep, last = reason.rpartition(SLURM_APPENDED)
    return last if sep and last.startswith(SLURM_TIMEOUT) and not HELD.match(head) else None


def seen_power(node: NodeState, before: Power | None = None) -> tuple[Power, str]:
    """What Slurm shows of ``node`` as a power state, and the text that says so.

    Flags first (powering up/down); then DOWN with our give-up reason is HELD; DOWN with Slurm's
    "ResumeTimeout reached" (:func:`slurm_timeout`; the error is then Slurm's part), with the power command's "resume failed (<backend>): <error>" (the error is then
    "<backend>: <error>"), or with any reason not ours while the node was powering up is FAILED; otherwise
    powered down is OFF and anything else ON."""
    flags = {f.lower() for f in node.flags}
    shown = "+".join([node.state.upper(), *(f.upper() for f in node.flags)])
    reason = node.reason.strip()
    if node.state == "down" and not {"powering_up", "power_up"} & flags:  # a boot under way is not a failure
        if HELD.match(reason):
            return Power.HELD, reason
        if backend := BACKEND_FAILED.match(reason):
            return Power.FAILED, f"{backend.group(1)}: {reason[backend.end():]}"
        if timeout := slurm_timeout(reason):
            return Power.FAILED, timeout
        if before == Power.POWERING_UP and reason and not reason.startswith(TAG):
            return Power.FAILED, reason
    if "power_down" in flags and "powered_down" not in flags:
        return Power.POWERING_DOWN, f"Slurm shows {shown}"
    return observed(shown), f"Slurm shows {shown}"


def sync_records(nodes: Iterable[NodeState], records: dict[str, NodePower], now: float,
                 resume_timeout: float, policy: RetryPolicy) -> dict[str, NodePower]:
    """Every node's record after following Slurm (passive edges only), plus the stuck-boot timeout."""
    out = {}
    for n in nodes:
        rec = records.get(n.name)
        seen, why = seen_power(n, rec.state if rec else None)
        if rec is None:
            rec = NodePower(n.name, seen, now, failures=int(seen in (Power.FAILED, Power.HELD)),
                            last_error=why if seen in (Power.FAILED, Power.HELD) else "")
        else:
            rec = sync(rec, seen, now, why)
        limit = resume_timeout + policy.stuck_slack_s
        if rec.state == Power.POWERING_UP and seen == Power.POWERING_UP and now - rec.since > limit:
            rec = rec.apply(Event.TIMED_OUT, now, f"still powering up {now - rec.since:.0f} s after the "
                                                  f"request (ResumeTimeout {resume_timeout:g} s)")
        out[n.name] = rec
    return out


def remediate(records: dict[str, NodePower], nodes: dict[str, NodeState], now: float,
              policy: RetryPolicy) -> tuple[list[PowerNodes], dict[str, NodePower]]:
    """Actions for failed power-ups (at most one per node) and the records after them (active edges)."""
    actions, out = [], dict(records)
    for name, rec in records.items():
        if rec.state != Power.FAILED:
            continue
        shown = nodes.get(name)
        booting = shown is not None and bool({"powering_up", "power_up"} & set(shown.flags))
        if booting:
            action = PowerNodes((name,), "POWER_DOWN_FORCE", f"stuck: {rec.last_error}; forced down for a "
                                f"clean resume (failure {rec.failures})", Cause.STUCK_BOOT)
            out[name] = rec.apply(Event.REMEDIATE, now, action.reason)
        elif rec.failures > policy.max_retries:
            action = PowerNodes((name,), "DOWN", f"{GIVE_UP_TEXT} {rec.failures} times: {rec.last_error}",
                                Cause.GIVE_UP)
            out[name] = rec.apply(Event.GIVE_UP, now, f"{TAG} {action.reason}")
        elif now - rec.since >= (wait := policy.backoff(rec.failures)):
            action = PowerNodes((name,), "POWER_UP", f"retry {rec.failures}/{policy.max_retries} after "
                                f"{wait:.0f} s: {rec.last_error}", Cause.RETRY)
            out[name] = rec.apply(Event.REQUEST_UP, now, action.reason)
        else:
            continue
        actions.append(action)
    return actions, out
