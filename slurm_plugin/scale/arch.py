"""Architecture controller: when portable work dominates, keep the spare powered capacity on the CPU group where a
core costs least (money and energy), and none on the dearer ones. Pure: counts in, shifts with reasons out.

Portable work is work that more than one architecture may run (a constraint ``aarch64|x86_64``, or a class
marked ``portable`` in the site). CPU demand is :func:`arch_demand`: the cores of the jobs submitted within the
last ``window_s`` (live: those the snapshot still shows, pending or running; simulated: the trace's), split
into portable and pinned; the live planner and the simulator both compute it with that one function. When the
portable share reaches ``dominance``, the warm pools of the other portable-capable groups are moved to the
cheapest group per core::

    price per core-hour = (cost_per_hour + energy_price_kwh * busy_w / 1000) / cores

A source group gives up its whole warm pool (``nodes_out``); the target gets as many nodes as hold the same
cores (``nodes_in``, rounded up, at most its nodes that are not yet warm). Example: 1 warm x86 node of 16
cores at $0.80/h + 350 W becomes 1 warm ARM node of 64 cores at $0.55/h + 200 W when 80 % of the CPU demand
is portable. Below ``dominance`` nothing moves: pinned work needs its own architecture warm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_DOMINANCE = 0.5
DEFAULT_ENERGY_PRICE_KWH = 0.25


OTHER, PINNED, PORTABLE = 0, 1, 2  # a job's kind for the controller


def job_kind(has_gres: bool, cpu_group_archs: Sequence[str]) -> int:
    """PORTABLE: no GRES and CPU groups of two or more architectures; PINNED: no GRES, one architecture; OTHER:
    GRES work or no CPU group (the controller leaves it out)."""
    if has_gres or not cpu_group_archs:
        return OTHER
    return PORTABLE if len(set(cpu_group_archs)) >= 2 else PINNED


@dataclass(frozen=True)
class ArchDemand:
    """What :func:`plan_arch` reads: cores of portable and pinned jobs, and the CPU groups (bit ``i`` = group
    ``i`` of the caller's list) every portable job may use."""

    portable_cores: float
    pinned_cores: float
    common: int


def arch_demand(submit, cores, kind, groups, now: float, window_s: float) -> ArchDemand:
    """The CPU demand of the jobs submitted in ``(now - window_s, now]``. Per job, as numpy arrays sorted by
    ``submit``: its cores, :func:`job_kind` and its CPU groups as a bit mask (int64)."""
    import numpy as np  # the live cycle pays for numpy at its first plan with the controller on, not at import

    lo, hi = np.searchsorted(submit, [now - window_s, now], side="right")
    k, c = kind[lo:hi], cores[lo:hi]
    port = k == PORTABLE
    common = int(np.bitwise_and.reduce(groups[lo:hi][port])) if port.any() else 0
    return ArchDemand(float(c[port].sum()), float(c[k == PINNED].sum()), common)


@dataclass(frozen=True)
class ArchGroup:
    """One CPU node group as the controller sees it: ``warm`` = idle nodes its warm pool keeps on; ``room`` =
    how many more nodes it could power (nodes neither busy nor already warm)."""

    name: str
    arch: str
    cores: int
    cost_per_hour: float
    busy_w: float
    warm: int
    room: int

    def price_per_core_hour(self, energy_price_kwh: float) -> float:
        return (self.cost_per_hour + energy_price_kwh * self.busy_w / 1000.0) / max(self.cores, 1)


@dataclass(frozen=True)
class ArchShift:
    """Move ``nodes_out`` warm nodes of ``source`` to ``nodes_in`` warm nodes of ``target``, because ``reason``."""

    source: str
    target: str
    nodes_out: int
    nodes_in: int
    reason: str


def plan_arch(groups: list[ArchGroup], portable_cores: float, pinned_cores: float,
              dominance: float = DEFAULT_DOMINANCE,
              energy_price_kwh: float = DEFAULT_ENERGY_PRICE_KWH) -> list[ArchShift]:
    """The shifts to make (empty when portable work does not dominate, or one architecture only is involved).

    ``groups``: the CPU groups portable work may use; ``portable_cores`` / ``pinned_cores``: cores of pending and
    running jobs that may / may not change architecture."""
    if not 0.0 < dominance <= 1.0:
        raise ValueError(f"dominance must be in (0, 1], got {dominance}")
    total = portable_cores + pinned_cores
    if total <= 0 or len({g.arch for g in groups}) < 2:
        return []
    share = portable_cores / total
    if share < dominance:
        return []
    target = min(groups, key=lambda g: (g.price_per_core_hour(energy_price_kwh), g.name))
    shifts, room = [], target.room
    for g in sorted(groups, key=lambda g: g.name):
        if g is target or g.arch == target.arch or g.warm == 0:
            continue
        nodes_in = min(room, math.ceil(g.warm * g.cores / max(target.cores, 1)))
        room -= nodes_in
        shifts.append(ArchShift(g.name, target.name, g.warm, nodes_in, (
            f"portable work is {share:.0%} of CPU demand (>= {dominance:.0%}); a core costs "
            f"{target.price_per_core_hour(energy_price_kwh):.4f}/h on {target.name} ({target.arch}) vs "
            f"{g.price_per_core_hour(energy_price_kwh):.4f}/h on {g.name} ({g.arch}): warm pool of {g.warm} "
            f"{g.name} node(s) ({g.warm * g.cores} cores) moved to {nodes_in} {target.name} node(s)")))
    return shifts


def warm_after(shifts: list[ArchShift], warm: dict[str, int]) -> dict[str, int]:
    """The per-group warm pools once ``shifts`` are applied."""
    out = dict(warm)
    for s in shifts:
        out[s.source] = max(0, out.get(s.source, 0) - s.nodes_out)
        out[s.target] = out.get(s.target, 0) + s.nodes_in
    return out
