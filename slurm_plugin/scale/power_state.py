"""Node power as an explicit state machine with a timestamped, bounded history.

States follow what Slurm shows (``idle~`` = OFF, ``#`` = POWERING_UP, ``%`` = POWERING_DOWN), plus FAILED for a
power-up that did not complete (Slurm marked it DOWN "ResumeTimeout reached", the resume program marked it DOWN,
or it stayed POWERING_UP far past ResumeTimeout) and HELD for a node the suite stopped retrying (left DOWN with
the backend's error as its reason until an admin or a health check clears it). Every edge is in
:data:`TRANSITIONS` with the reason it exists; an event with no edge from the current state is refused
(:class:`InvalidTransition`), and asking for the state a node is already heading to is a no-op (Slurm may run
ResumeProgram twice).

:func:`sync` follows Slurm passively (the shortest chain of passive edges that explains what Slurm shows);
the planner then acts (active edges: REQUEST_UP, REQUEST_DOWN, REMEDIATE, GIVE_UP).
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, replace

HISTORY_MAX = 20  # changes kept per node (the oldest are dropped)


class Power(enum.Enum):
    OFF = "off"
    POWERING_UP = "powering_up"
    ON = "on"
    POWERING_DOWN = "powering_down"
    FAILED = "failed"
    HELD = "held"


class Event(enum.Enum):
    REQUEST_UP = "request_up"
    REQUEST_DOWN = "request_down"
    BOOTED = "booted"
    HALTED = "halted"
    TIMED_OUT = "timed_out"
    REMEDIATE = "remediate"
    GIVE_UP = "give_up"


# (from, event) -> (to, why this edge exists)
TRANSITIONS: dict[tuple[Power, Event], tuple[Power, str]] = {
    (Power.OFF, Event.REQUEST_UP): (Power.POWERING_UP, "work needs the node: Slurm runs ResumeProgram"),
    (Power.POWERING_UP, Event.BOOTED): (Power.ON, "slurmd registered with a boot time after the request"),
    (Power.POWERING_UP, Event.TIMED_OUT): (Power.FAILED, "no registration within ResumeTimeout"),
    (Power.POWERING_UP, Event.HALTED): (Power.OFF, "the boot was cancelled: powered down before it registered"),
    (Power.ON, Event.REQUEST_DOWN): (Power.POWERING_DOWN, "idle and not needed: Slurm runs SuspendProgram"),
    (Power.POWERING_DOWN, Event.HALTED): (Power.OFF, "SuspendTimeout passed; Slurm counts the node as off"),
    (Power.POWERING_DOWN, Event.TIMED_OUT): (Power.FAILED, "still reachable long after SuspendTimeout"),
    (Power.POWERING_DOWN, Event.BOOTED): (Power.ON, "the power-down was cancelled: Slurm shows the node up"),
    (Power.FAILED, Event.REMEDIATE): (Power.POWERING_DOWN, "force power-down (POWER_DOWN_FORCE) to reset it"),
    (Power.FAILED, Event.REQUEST_UP): (Power.POWERING_UP, "retry the resume after a backoff (bounded retries)"),
    (Power.FAILED, Event.GIVE_UP): (Power.HELD, "retries used up: left DOWN with the error as its reason"),
    (Power.ON, Event.HALTED): (Power.OFF, "found off without our request (crash, admin, Slurm's idle timer)"),
    (Power.OFF, Event.BOOTED): (Power.ON, "found running without our request (admin or Slurm resumed it)"),
    (Power.FAILED, Event.BOOTED): (Power.ON, "a stuck boot completed after all"),
    (Power.FAILED, Event.HALTED): (Power.OFF, "an admin cleared the failure (state=RESUME): off and usable"),
    (Power.HELD, Event.BOOTED): (Power.ON, "an admin or a health check returned it to service"),
    (Power.HELD, Event.HALTED): (Power.OFF, "an admin resumed it (state=RESUME): off and usable again"),
    (Power.HELD, Event.REQUEST_UP): (Power.POWERING_UP, "an admin resumed it and Slurm boots it"),
}
# Asking again for where the node is already going changes nothing.
IDEMPOTENT: dict[Event, set[Power]] = {
    Event.REQUEST_UP: {Power.POWERING_UP, Power.ON},
    Event.REQUEST_DOWN: {Power.POWERING_DOWN, Power.OFF},
}
# Edges sync may follow on its own: what Slurm (or an admin) did, not what the suite decides.
PASSIVE = (Event.BOOTED, Event.HALTED, Event.REQUEST_UP, Event.REQUEST_DOWN, Event.TIMED_OUT)
# Leaving a failure this way means someone cleared it (or the node came up): the retry count starts again.
_CLEARS = {(Power.FAILED, Power.ON), (Power.FAILED, Power.OFF), (Power.HELD, Power.ON), (Power.HELD, Power.OFF),
           (Power.HELD, Power.POWERING_UP), (Power.POWERING_UP, Power.ON)}


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
    """One node's power state, since when, its last :data:`HISTORY_MAX` changes with their causes, how many
    power-ups failed in a row (``failures``; reset when the node comes up or an admin clears it) and the last
    failure's error text."""

    node: str
    state: Power
    since: float
    history: tuple[Change, ...] = ()
    failures: int = 0
    last_error: str = ""

    def apply(self, event: Event, now: float, cause: str = "") -> NodePower:
        """The node after ``event`` at ``now``; raises InvalidTransition for an event with no edge. Entering
        FAILED counts a failure and keeps ``cause`` as the error."""
        if self.state in IDEMPOTENT.get(event, set()):
            return self
        edge = TRANSITIONS.get((self.state, event))
        if edge is None:
            raise InvalidTransition(f"{self.node}: no transition from {self.state.value} on {event.value}")
        to, why = edge
        change = Change(now, self.state, to, event, cause or why)
        failures, error = self.failures, self.last_error
        if to == Power.FAILED:
            failures, error = failures + 1, cause or why
        elif (self.state, to) in _CLEARS:
            failures = 0
        return replace(self, state=to, since=now, history=(self.history + (change,))[-HISTORY_MAX:],
                       failures=failures, last_error=error)

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


def _path(frm: Power, to: Power) -> list[Event] | None:
    """The shortest chain of passive events from ``frm`` to ``to`` (None if Slurm cannot get there alone)."""
    queue, seen = deque([(frm, [])]), {frm}
    while queue:
        state, events = queue.popleft()
        if state == to:
            return events
        for event in PASSIVE:
            edge = TRANSITIONS.get((state, event))
            if edge and edge[0] not in seen:
                seen.add(edge[0])
                queue.append((edge[0], events + [event]))
    return None


def sync(node: NodePower, seen: Power | str, now: float, cause: str = "") -> NodePower:
    """Passive transitions first (Ray-style reconcile): follow what Slurm shows without acting on it.

    ``seen`` is a Power state (or Slurm's state text, read with :func:`observed`). The node follows the
    shortest chain of passive edges to it, each change with ``cause``; a state no passive chain reaches
    (e.g. HELD after the memory was lost) is taken as it is, with a history entry saying so."""
    if isinstance(seen, str):
        cause, seen = cause or f"Slurm shows {seen}", observed(seen)
    if seen == node.state:
        return node
    cause = cause or f"Slurm shows {seen.value}"
    events = _path(node.state, seen)
    if events is None:
        change = Change(now, node.state, seen, Event.GIVE_UP if seen == Power.HELD else Event.TIMED_OUT, cause)
        return replace(node, state=seen, since=now, history=(node.history + (change,))[-HISTORY_MAX:])
    for event in events:
        node = node.apply(event, now, cause)
    return node
