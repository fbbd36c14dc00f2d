"""Node power states and energy/cost accounting.

States and edges (the engine is the only code that moves a node):
  ON -> SHUTTING   scaling policy powers down an idle node (takes shutdown_s, draws idle power)
  SHUTTING -> OFF  shutdown done (draws off power)
  OFF -> BOOTING   a job is placed on the node, or the scaling policy powers it up (takes boot_s, idle power)
  BOOTING -> ON    boot done; jobs placed on it begin now
A powered node draws idle_w + (busy_w - idle_w) x (fraction of its cores in use).
"""

from __future__ import annotations

import numpy as np

from ..scale.power_state import Power

# The simulator's node states are the live planner's (scale/power_state.Power), coded as small ints for numpy
# arrays (codes unchanged: ON 0, OFF 1, BOOTING 2, SHUTTING 3); FAILED/HELD do not occur in the simulator.
SIM_STATES = (Power.ON, Power.OFF, Power.POWERING_UP, Power.POWERING_DOWN)
ON, OFF, BOOTING, SHUTTING = range(len(SIM_STATES))
STATE_NAMES = ("on", "off", "booting", "shutting")


def power_of(code: int) -> Power:
    """The shared :class:`~slurm_plugin.scale.power_state.Power` state of a simulator state code."""
    return SIM_STATES[code]


class PowerMeter:
    """Integrates watts and cost over time; ``advance(t)`` before every state or load change."""

    def __init__(self, machine, cluster) -> None:
        counts = [g.count for g in machine.groups]
        rep = lambda v: np.repeat(np.asarray(v, dtype=float), counts)  # noqa: E731
        self.idle_w = rep([g.idle_w for g in machine.groups])
        self.busy_w = rep([g.busy_w for g in machine.groups])
        self.off_w = rep([g.off_w for g in machine.groups])
        self.cost_h = rep([g.cost_per_hour for g in machine.groups])
        self.cluster = cluster
        self.dyn_w = (self.busy_w - self.idle_w) / cluster.cap_c  # extra watts per busy core
        self.group_dyn_w = [(g.busy_w - g.idle_w) / g.cores for g in machine.groups]
        # the same figures as lists, for the one-node refresh (most starts and ends)
        self._idle, self._busy, self._off = self.idle_w.tolist(), self.busy_w.tolist(), self.off_w.tolist()
        self._cap = cluster.cap_c.tolist()
        self.node_w = self.idle_w.copy()
        self.watts = float(self.node_w.sum())
        self.cost_rate = float(self.cost_h.sum()) / 3600.0
        self.joules = 0.0
        self.cost = 0.0
        self.t = None

    def advance(self, t: float) -> None:
        if self.t is not None and t > self.t:
            dt = t - self.t
            self.joules += self.watts * dt
            self.cost += self.cost_rate * dt
        self.t = t if self.t is None else max(self.t, t)

    def refresh(self, nodes: np.ndarray) -> None:
        """Recompute the draw of ``nodes`` after their load or state changed."""
        c = self.cluster
        if len(nodes) == 1:
            i = int(nodes[0])
            st = c.state[i]
            if st == ON:
                idle = self._idle[i]
                w = idle + (self._busy[i] - idle) * (1.0 - int(c.free_c[i]) / self._cap[i])
            else:
                w = self._off[i] if st == OFF else self._idle[i]
            self.watts += float(w - self.node_w[i])
            self.node_w[i] = w
            return
        st = c.state[nodes]
        used = 1.0 - c.free_c[nodes] / c.cap_c[nodes]
        w = np.where(st == ON, self.idle_w[nodes] + (self.busy_w[nodes] - self.idle_w[nodes]) * used,
                     np.where(st == OFF, self.off_w[nodes], self.idle_w[nodes]))
        self.watts += float(w.sum() - self.node_w[nodes].sum())
        self.node_w[nodes] = w

    def load_change(self, nodes: np.ndarray, cores: int, group: int | None = None) -> None:
        """Fast path when every node is always on (``node_w`` is then unused): ``cores`` more (fewer, if
        negative) busy on each of ``nodes``, all in ``group`` if given."""
        if group is not None:
            self.watts += cores * len(nodes) * self.group_dyn_w[group]
        else:
            self.watts += cores * float(self.dyn_w[nodes].sum())

    def set_powered(self, nodes: np.ndarray, powered: bool) -> None:
        """Count ``nodes`` in (or out of) the cost of powered nodes."""
        sign = 1.0 if powered else -1.0
        self.cost_rate += sign * float(self.cost_h[nodes].sum()) / 3600.0
