"""How many idle nodes a node group keeps on, and which go down: one decision for the live planner and the simulator.

Two pure functions:

* :func:`warm_target` (the break-even rule): powering an idle node down saves ``idle_w`` for as long as it
  stays off, but the next job that needs it waits ``boot_s``. Priced at ``wait_price_w`` watts per second of
  job wait, powering down pays when the idle gap is longer than the *break-even gap*
  ``boot_s * (1 + wait_price_w / idle_w)``: short for a GPU node that draws 500 W idle, long for an ARM node
  that draws 60 W. With ``rate`` jobs per second arriving for the group, ``rate * break_even`` jobs are expected
  within that gap: that many idle nodes (rounded down) stay warm, and while at least one job is expected an idle
  node waits out the whole gap before going down; otherwise (nights, weekends, a quiet group) idle nodes go down
  after ``min_grace_s``. The off-peak calendar is thus followed from the arrival rate, not from a clock.
* :func:`demand_timer` (the demand-aware idle timer, tuned per site by ``hetsched tune``): Slurm's idle timer
  (every idle node goes down after ``grace_s``, its SuspendTime) that powers idle nodes down sooner, after
  ``quiet_grace_s``, when they are beyond the nodes expected to be asked for within ``grace_s``
  (:func:`timer_keep` of the group's recent node arrivals). With ``quiet_grace_s = grace_s`` it *is* the idle
  timer, so a search along ``quiet_grace_s`` starts from the timer's own schedule.
* :func:`group_power`: from a group's counts (busy, idle with their idle times, booting, off) and the wanted
  extra nodes (backlog, warm pool, PID headroom), how many nodes to power up and which idle ones to power down.

Example: ``warm_target(rate=1/600, idle_w=500, boot_s=180, nodes=1, wait_price_w=1000, min_grace_s=30)`` has a
break-even gap of 540 s, expects 0.9 jobs in it: no warm node, grace 30 s (the GPU node goes down quickly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Defaults shared by the live planner and the simulator (results/scale/README.md: the sweep that chose them)
DEFAULT_WAIT_PRICE_W = 10000.0  # watts one second of job wait is worth
DEFAULT_WINDOW_S = 7200.0  # arrival rate over the last two hours
DEFAULT_MIN_GRACE_S = 300.0  # idle time before a node of a quiet group goes down


@dataclass(frozen=True)
class WarmTarget:
    """``warm``: idle nodes to keep on (refilled from off nodes); ``grace_s``: idle time before any other idle
    node may go down; ``reason``: the numbers behind both."""

    warm: int
    grace_s: float
    reason: str


def breakeven_gap_s(idle_w: float, boot_s: float, wait_price_w: float) -> float:
    """The idle gap beyond which powering a node down saves more energy than the wait it causes is worth."""
    if idle_w <= 0:
        return math.inf if boot_s > 0 else 0.0
    return boot_s * (1.0 + wait_price_w / idle_w)


def cycle_breakeven_s(idle_w: float, off_w: float, boot_s: float, shutdown_s: float) -> float:
    """The idle gap beyond which one power cycle (shut down, stay off, boot when the next job comes) uses less
    energy than staying idle: ``shutdown_s + boot_s * idle_w / (idle_w - off_w)`` (shutting down and booting
    draw idle power, off draws ``off_w``; the boot is extra, the job's own run is the same either way). Wait is
    not priced: this is the energy-only break-even (156.3 s for the SWF default node). Infinite when off draws
    as much as idle."""
    if idle_w <= off_w:
        return math.inf
    return shutdown_s + boot_s * idle_w / (idle_w - off_w)


def warm_target(rate: float, idle_w: float, boot_s: float, nodes: int, wait_price_w: float,
                min_grace_s: float) -> WarmTarget:
    """The break-even rule for one node group (see the module docstring). ``rate``: jobs per second arriving
    for the group (each job counted against the cheapest group it may use)."""
    if rate < 0 or nodes < 0 or wait_price_w < 0 or min_grace_s < 0:
        raise ValueError(f"warm_target needs non-negative inputs (rate={rate}, nodes={nodes}, "
                         f"wait_price_w={wait_price_w}, min_grace_s={min_grace_s})")
    gap = breakeven_gap_s(idle_w, boot_s, wait_price_w)
    expected = rate * gap
    warm = min(nodes, int(expected)) if math.isfinite(expected) else nodes
    grace = max(min_grace_s, gap) if expected >= 1.0 else min_grace_s
    return WarmTarget(warm, grace, f"{rate * 3600:.1f} jobs/h x break-even {gap:.0f} s = {expected:.1f} expected: "
                                   f"{warm} warm, grace {grace:.0f} s")


def timer_keep(node_rate: float, grace_s: float) -> int:
    """Idle nodes the demand-aware timer keeps until ``grace_s``: the nodes expected to be asked for within
    ``grace_s`` at ``node_rate`` (nodes per second of recent arrivals), rounded up (0 when nothing arrived)."""
    if node_rate < 0 or grace_s < 0:
        raise ValueError(f"timer_keep needs non-negative inputs (node_rate={node_rate}, grace_s={grace_s})")
    return math.ceil(node_rate * grace_s - 1e-9)


def demand_timer(idle_for: list[float], keep: int, grace_s: float, quiet_grace_s: float) -> tuple[int, ...]:
    """Positions (ascending) of the idle nodes the demand-aware idle timer powers down: every node idle at least
    ``grace_s``, and every node idle at least ``quiet_grace_s`` that is not among the ``keep`` most recently idle.
    ``quiet_grace_s >= grace_s`` or ``keep >= len(idle_for)``: exactly the idle timer at ``grace_s``;
    ``keep = 0``: the idle timer at ``min(grace_s, quiet_grace_s)``.

    Example: idle for [100, 400, 200, 50] s, keep 1, grace 300, quiet 40: node 1 (>= 300 s) and nodes 0 and 2
    (>= 40 s, not the most recent) go down, node 3 (the most recent) stays: (0, 1, 2)."""
    if keep < 0 or grace_s < 0 or quiet_grace_s < 0:
        raise ValueError(f"demand_timer needs non-negative inputs (keep={keep}, grace_s={grace_s}, "
                         f"quiet_grace_s={quiet_grace_s})")
    kept = set(sorted(range(len(idle_for)), key=lambda i: (idle_for[i], i))[:keep])
    quiet = min(grace_s, quiet_grace_s)
    return tuple(i for i, t in enumerate(idle_for) if t >= grace_s or (t >= quiet and i not in kept))


@dataclass(frozen=True)
class GroupPower:
    """``up``: how many off nodes to power up; ``down``: positions (into the ``idle_for`` given) of the idle
    nodes to power down, longest idle first; ``want``: the nodes the group should have on or booting."""

    up: int
    down: tuple[int, ...]
    want: int


def group_power(busy: int, idle_for: list[float], booting: int, off: int, extra: int, grace_s: float,
                min_on: int = 0, max_on: int | None = None, other_on: int = 0) -> GroupPower:
    """One group's power step. ``want = busy + extra`` (``extra``: backlog + warm pool + PID headroom), clamped
    to ``[min_on, max_on]`` and the group's size. Fewer on or booting than wanted: power up off nodes; more:
    power down idle nodes idle for at least ``grace_s``, the longest idle first. Busy nodes never go down;
    ``other_on`` nodes (on, neither busy nor usable, e.g. drained) count as on but are never chosen."""
    total = busy + len(idle_for) + booting + off + other_on
    want = max(min_on, min(busy + extra, total if max_on is None else min(max_on, total)))
    have = busy + len(idle_for) + booting + other_on
    if want > have:
        return GroupPower(min(off, want - have), (), want)
    calm = sorted((i for i, t in enumerate(idle_for) if t >= grace_s), key=lambda i: -idle_for[i])
    return GroupPower(0, tuple(calm[: have - want]), want)
