"""Node power as an explicit state machine with a timestamped history.

States follow what Slurm shows (``idle~`` = OFF, ``#`` = POWERING_UP, ``%`` = POWERING_DOWN) plus FAILED for a node
stuck in a transition past Slurm's ResumeTimeout/SuspendTimeout. Every edge is in :data:`TRANSITIONS` with the
reason it exists; an event with no edge from the current state is refused (:class:`InvalidTransition`), and
asking for the state a node is already heading to is a no-op (Slurm may run ResumeProgram twice).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace


class Power(enum.Enum):
    OFF = "off"
    POWERING_UP = "powering_up"
    ON = "on"
    POWERING_DOWN = "powering_down"
    FAILED = "failed"


class Event(enum.Enum):
    REQUEST_UP = "request_up"
    REQUEST_DOWN = "request_down"
    BOOTED = "booted"
    HALTED = "halted"
    TIMED_OUT = "timed_out"
    REMEDIATE = "remediate"


# (from, event) -> (to, why this edge exists)
TRANSITIONS: dict[tuple[Power, Event], tuple[Power, str]] = {
    (Power.OFF, Event.REQUEST_UP): (Power.POWERING_UP, "work needs the node: Slurm runs ResumeProgram"),
    (Power.POWERING_UP, Event.BOOTED): (Power.ON, "slurmd registered with a boot time after the request"),
    (Power.POWERING_UP, Event.TIMED_OUT): (Power.FAILED, "no registration within ResumeTimeout"),
    (Power.ON, Event.REQUEST_DOWN): (Power.POWERING_DOWN, "idle and not needed: Slurm runs SuspendProgram"),
    (Power.POWERING_DOWN, Event.HALTED): (Power.OFF, "SuspendTimeout passed; Slurm counts the node as off"),
    (Power.POWERING_DOWN, Event.TIMED_OUT): (Power.FAILED, "still reachable long after SuspendTimeout"),
    (Power.FAILED, Event.REMEDIATE): (Power.POWERING_DOWN, "force power-down (POWER_DOWN_FORCE) to reset it"),
    (Power.ON, Event.HALTED): (Power.OFF, "found off without our request (crash, admin, Slurm's idle timer)"),
    (Power.OFF, Event.BOOTED): (Power.ON, "found running without our request (admin or Slurm resumed it)"),
    (Power.FAILED, Event.BOOTED): (Power.ON, "a stuck boot completed after all"),
    (Power.FAILED, Event.HALTED): (Power.OFF, "a stuck node went off after all"),
}
# Asking again for where the node is already going changes nothing.
IDEMPOTENT: dict[Event, set[Power]] = {
    Event.REQUEST_UP: {Power.POWERING_UP, Power.ON},
    Event.REQUEST_DOWN: {Power.POWERING_DOWN, Power.OFF},
}


class InvalidTransition(ValueError):
    pass


@dataclass(frozen=True)
class Change:
    t: float
    frm: Power
    to: Power
    event: Event
    cause: str


@dataclass(frozen=True)
class NodePower:
    """One node's power state, since when, and every change with its cause."""

    node: str
    state: Power
    since: float
    history: tuple[Change, ...] = ()

    def apply(self, event: Event, now: float, cause: str = "") -> NodePower:
        """The node after ``event`` at ``now``; raises InvalidTransition for an event with no edge."""
        if self.state in IDEMPOTENT.get(event, set()):
            return self
        edge = TRANSITIONS.get((self.state, event))
        if edge is None:
            raise InvalidTransition(f"{self.node}: no transition from {self.state.value} on {event.value}")
        to, why = edge
        change = Change(now, self.state, to, event, cause or why)
        return replace(self, state=to, since=now, history=self.history + (change,))

    def stuck(self, now: float, resume_timeout: float, suspend_timeout: float) -> bool:
        """True if a transition has lasted longer than Slurm allows for it."""
        limit = {Power.POWERING_UP: resume_timeout, Power.POWERING_DOWN: suspend_timeout}.get(self.state)
        return limit is not None and now - self.since > limit


def observed(slurm_state: str) -> Power:
    """Map Slurm's node state flags (``scontrol show node`` State=, sinfo --json state list) to a Power state."""
    flags = set(slurm_state.upper().replace("+", " ").replace(",", " ").split())
    if "POWERING_UP" in flags or "POWER_UP" in flags:
        return Power.POWERING_UP
    if "POWERING_DOWN" in flags:
        return Power.POWERING_DOWN
    if "POWERED_DOWN" in flags:
        return Power.OFF
    return Power.ON


def sync(node: NodePower, slurm_state: str, now: float) -> NodePower:
    """Passive transitions first (Ray-style reconcile): follow what Slurm shows without acting on it."""
    seen = observed(slurm_state)
    if seen == node.state:
        return node
    if seen == Power.ON:
        return node.apply(Event.BOOTED, now, f"Slurm shows {slurm_state}")
    if seen == Power.OFF:
        return node.apply(Event.HALTED, now, f"Slurm shows {slurm_state}")
    if seen == Power.POWERING_UP and node.state == Power.OFF:
        return node.apply(Event.REQUEST_UP, now, f"Slurm resumed it ({slurm_state})")
    if seen == Power.POWERING_DOWN and node.state == Power.ON:
        return node.apply(Event.REQUEST_DOWN, now, f"Slurm suspends it ({slurm_state})")
    return node
