"""The daemon's re-matching of units not started, in the simulator (a :class:`~slurm_plugin.sim.hooks.PackingPolicy`).

Every ``interval_s`` (the cycle's period) each pending ``rrg`` job asks :func:`~.match.rematch_in` (the rule
``hetsched dag rematch`` and the cycle's ``dag`` step use) with the simulated cluster's free capacity per node
group and its busy nodes' planned ends (start + time limit: what a snapshot's end times say). A move narrows
the job's request to the new class's node group, as ``scontrol update partition=.. features=..`` does live.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..pack.model import Resources
from ..sim.cluster import Req
from ..sim.machine import Machine
from .match import Option, Releases, rematch_in
from .units import Unit

CYCLE_S = 60.0  # the steering cycle's period (the simulator's packing interval too)


@dataclass
class RowMatch:
    """One pending job (an element of a unit): the unit as one element, where it is now and where else it may go."""

    unit: Unit
    current: Option
    options: tuple[Option, ...]


@dataclass
class DagRematch:
    """Moves pending rrg jobs off full classes (see the module docstring). ``rows``: sorted job row -> its match."""

    machine: Machine
    rows: dict[int, RowMatch] = field(default_factory=dict)
    interval_s: float = CYCLE_S
    name: str = "dag-rematch"
    moves: int = 0

    def decide(self, view) -> dict[int, Req]:
        waiting = [int(j) for j in view.pending if int(j) in self.rows]
        if not waiting:
            return {}
        c = view.cluster
        gi = {g.name: i for i, g in enumerate(self.machine.groups)}
        free, releases = self._capacity(c, view.now)
        out = {}
        for j in waiting:
            m = self.rows[j]
            alt = rematch_in(m.unit, m.current, [o for o in m.options if o is not m.current], free, releases)
            if alt is None:
                continue
            r = view.current(j)
            g = gi[alt.cls.pool]
            col = -1
            if r.gcount:
                col = c.keys.index((m.unit.accel[0], alt.cls.accel_type))
            out[j] = Req(r.nodes, r.cores, r.mem, r.gcount, ((g, col),), r.cores >= self.machine.groups[g].cores)
            m.current = alt
            self.moves += 1
        return out

    def _capacity(self, c, now: float) -> tuple[dict[str, Resources], Releases]:
        """Free capacity per node group now, and each busy node's planned end with what it then frees."""
        free, releases = {}, {}
        for g, spec in enumerate(self.machine.groups):
            s, e = int(c.start[g]), int(c.end[g])
            col = c.keys.index(next(iter(spec.gres))) if spec.gres else None
            acc = c.free_g[s:e, col] if col is not None else np.zeros(e - s)
            cap_acc = c.cap_g[s:e, col] if col is not None else np.zeros(e - s)
            free[spec.name] = Resources(float(c.free_c[s:e].sum()), float(c.free_m[s:e].sum()), float(acc.sum()))
            busy = np.flatnonzero(c.njobs[s:e] > 0)
            releases[spec.name] = [
                (float(c.est_free[s + i]) - now,
                 Resources(float(c.cap_c[s + i] - c.free_c[s + i]), float(c.cap_m[s + i] - c.free_m[s + i]),
                           float(cap_acc[i] - acc[i]))) for i in busy]
        return free, releases


__all__ = ["CYCLE_S", "DagRematch", "RowMatch"]
