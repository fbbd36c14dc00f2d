"""The hetsched power policy in the simulator (the same rules as :mod:`.planner` uses live).

Per node group: keep ``warm_fraction`` of its nodes (rounded down) idle and on (plus, with ``use_pid``, the PID
controller's headroom when the group runs hotter than ``target_util``), power every other idle node down after ``grace_s``, and power off nodes up to refill
the warm pool. Jobs placed on off nodes boot them (the engine does that, as Slurm does). Implements the
simulator's ScalingPolicy protocol; unlike the live planner it keeps its PID state on the object, because the
simulator calls one policy object for a whole run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..sim.hooks import PowerView
from ..sim.machine import Machine
from ..sim.power import BOOTING, OFF, ON
from .pid import DEFAULT_GAINS, PidGains, PidState, pid_step


@dataclass
class WarmPoolPower:
    machine: Machine
    grace_s: float = 120.0
    warm_fraction: float = 0.05
    target_util: float = 0.75
    use_pid: bool = False  # PID headroom on utilization; measured to cost energy here (results/scale)
    gains: PidGains = DEFAULT_GAINS
    interval_s: float = 60.0
    name: str = "hetsched"
    _pid: list[PidState] = field(default_factory=list, init=False)
    _group: np.ndarray = field(default=None, init=False)  # type: ignore[assignment]
    headroom: list[list[int]] = field(default_factory=list, init=False)  # per tick, per group (for plots)

    def __post_init__(self) -> None:
        counts = [g.count for g in self.machine.groups]
        self._warm = [int(self.warm_fraction * c) for c in counts]
        # output = change in powered nodes as a fraction of those on; only headroom (negative) is used, so the
        # output saturates at 0 and the integral stops growing while the group is under its target
        self._gains = replace(self.gains, out_min=-1.0, out_max=0.0)
        self._group = np.repeat(np.arange(len(counts)), counts)
        self._pid = [PidState() for _ in counts]

    def decide(self, view: PowerView) -> tuple[np.ndarray, np.ndarray]:
        downs, ups, extra = [], [], []
        idle = (view.state == ON) & (view.idle_for >= 0)
        busy = (view.state == ON) & (view.idle_for < 0)
        for gi in range(len(self.machine.groups)):
            mask = self._group == gi
            on = int((mask & (view.state == ON)).sum())
            util = float((mask & busy).sum()) / on if on else 0.0
            u, self._pid[gi] = pid_step(self._gains, self._pid[gi], self.target_util, util, self.interval_s / 60.0)
            head = math.ceil(-u * max(on, 1)) if u < 0 and self.use_pid else 0
            extra.append(head)
            keep = self._warm[gi] + head
            g_idle = np.flatnonzero(mask & idle)
            booting = int((mask & (view.state == BOOTING)).sum())
            if len(g_idle) > keep:
                # most recently idle stay on; the longest idle past the grace go down
                order = g_idle[np.argsort(-view.idle_for[g_idle], kind="stable")]
                surplus = order[: len(g_idle) - keep]
                downs.append(surplus[view.idle_for[surplus] >= self.grace_s])
            elif len(g_idle) + booting < keep:
                off = np.flatnonzero(mask & (view.state == OFF))
                ups.append(off[: keep - len(g_idle) - booting])
        self.headroom.append(extra)
        empty = np.empty(0, dtype=np.int64)
        return (np.concatenate(downs) if downs else empty), (np.concatenate(ups) if ups else empty)
