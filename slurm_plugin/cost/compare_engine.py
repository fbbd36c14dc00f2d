"""The simulator's engine with two switchable additions for the cost comparison, kept out of the engine
module itself: admission routing at arrival (:class:`~.compare_admission.AdmissionRouting`) and a meter of
powered-on core-seconds per node group (utilization of what is powered, next to utilization of what exists)."""

from __future__ import annotations

import numpy as np

from ..sim.engine import Engine
from ..sim.power import PowerMeter


class PoweredMeter(PowerMeter):
    """:class:`~slurm_plugin.sim.power.PowerMeter` that also integrates the cores of powered nodes per group
    (``on_core_s``): a node counts from power-up (boot included) until its shutdown ends."""

    def __init__(self, machine, cluster) -> None:
        super().__init__(machine, cluster)
        self._group = cluster.group
        self.on_cores = np.bincount(cluster.group, weights=cluster.cap_c, minlength=len(machine.groups)).astype(float)
        self.on_core_s = np.zeros(len(machine.groups))

    def advance(self, t: float) -> None:
        if self.t is not None and t > self.t:
            self.on_core_s += self.on_cores * (t - self.t)
        super().advance(t)

    def set_powered(self, nodes: np.ndarray, powered: bool) -> None:
        super().set_powered(nodes, powered)
        np.add.at(self.on_cores, self._group[nodes], (1.0 if powered else -1.0) * self.cluster.cap_c[nodes])


class ChainedRouting:
    """Routers applied in order at arrival, each narrowing what the one before left (``route`` as
    :meth:`~.compare_admission.AdmissionRouting.route`)."""

    def __init__(self, routers: tuple):
        self.routers = routers

    def route(self, j: int, now: float, cluster, req):
        out = None
        for r in self.routers:
            new = r.route(j, now, cluster, out or req)
            out = new or out
        return out


class CostEngine(Engine):
    """:class:`~slurm_plugin.sim.engine.Engine` plus ``admission`` (None: off): each arriving job's request is
    narrowed as the daemon's admission decision says, before Slurm first tries to place it. ``job_nodes``: job
    index -> the node indices it ran on (what the cost report prices)."""

    def __init__(self, *args, admission=None, **kw):
        super().__init__(*args, **kw)
        self.meter = PoweredMeter(self.machine, self.cluster)
        self.admission = admission
        self.job_nodes: dict[int, np.ndarray] = {}

    def _start(self, j: int, r, cand: np.ndarray, t: float, nodes: np.ndarray | None = None) -> None:
        super()._start(j, r, cand, t, nodes)
        self.job_nodes[j] = self.running[j][1]

    def _enqueue(self, j: int) -> None:
        super()._enqueue(j)  # counted against its original home group, as _dequeue un-counts it
        if self.admission is not None:
            r = self.admission.route(j, float(self.jobs.submit[j]), self.cluster, self._req_of(j))
            if r is not None:
                self._req[j] = r
                self._epoch += 1
