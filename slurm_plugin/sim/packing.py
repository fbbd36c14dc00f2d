"""The simulator's packing step: the daemon cycle's :func:`~slurm_plugin.pack.plan.plan_moves`, every
``interval_s`` simulated seconds, on the simulator's pending jobs and free capacity.

What is flexible (``pinned=False``), as the live cycle reads it from Slurm (:mod:`slurm_plugin.cycle.inputs`):
a CPU job whose arch mask allows several architectures (``--constraint=aarch64|x86_64``), or an accelerator job
with an untyped GRES that more than one type on the machine can serve (``--gres=gpu:1``, the type chosen by a
feature). Every other job is pinned: it enters the problem (it competes for capacity) but is never moved.

A :class:`~slurm_plugin.pack.Move` (partition + features) is applied as ``scontrol update jobid=..
partition=P features=F`` would be: the job may from then on use only the node groups of P that carry F (and
that it could use before). Without packing Slurm's own greedy placement decides (lowest Weight = cheapest
group first, :meth:`~slurm_plugin.sim.cluster.ClusterState.req`), which is the baseline.

Speed factors (:func:`speed_matrix`): a job of workload class w runs ``run / speed(w, group)`` on a group (the
site's per-class factors, as packing's objective uses them), capped by its time limit (Slurm's TIMEOUT).
The comparison applies them with packing on and off alike.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..pack import GroupState, PendingJob, Resources
from ..pack.classes import classes_from_site, speed_table
from ..pack.plan import plan_moves
from ..site import ARCHES, Site
from ..workload.jobs import ARCH_BIT, JobTable
from .cluster import ClusterState, Req
from .machine import Machine
from .power import OFF, ON
from .views import PackView

BANDS = 8


def speed_matrix(site: Site, machine: Machine, jobs: JobTable) -> np.ndarray:
    """``[workload class row, group]`` -> run-speed factor; the last row (jobs with no class, ``wclass = -1``)
    is 1.0, and so is a factor of 0 (the class may not run there: packing never sends it, Slurm might)."""
    groups = {g.name: g for g in site.node_groups}
    out = np.ones((len(jobs.class_names) + 1, len(machine.groups)))
    for gi, g in enumerate(machine.groups):
        table = dict(speed_table(site, groups[g.name]))
        for ci, name in enumerate(jobs.class_names):
            f = table.get(name, 1.0)
            out[ci, gi] = f if f > 0 else 1.0
    return out


@dataclass
class PackStats:
    """What the packing step did over a run (for the result row)."""

    cycles: int = 0
    solves: int = 0
    moves: int = 0
    solve_s: float = 0.0
    max_solve_s: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"cycles": self.cycles, "solves": self.solves, "moves": self.moves, "solve_s": self.solve_s,
                "max_solve_s": self.max_solve_s, "statuses": dict(self.statuses)}


class MilpPacking:
    """Packing of flexible pending jobs onto node classes every ``interval_s`` (the daemon's cycle period).

    ``decide(view)`` returns, per job to change, its new :class:`Req` (options narrowed to the groups of the
    class it was moved to). ``max_jobs`` caps how many pending jobs (most urgent first) enter one problem.
    ``restore_unassigned`` (an experiment, not what the daemon does): a flexible job narrowed earlier that this
    step leaves unassigned gets its original request back.
    Example: on the demo site a ``--constraint=aarch64|x86_64`` web job assigned to ``batch/cpu-x86`` gets
    the options of ``cpu-x86`` only."""

    name = "milp"

    def __init__(self, site: Site, machine: Machine, jobs: JobTable, interval_s: float = 60.0,
                 time_cap_s: float = 1.0, band_step: int = 1000, max_jobs: int | None = 2000,
                 restore_unassigned: bool = False):
        self.site, self.machine, self.jobs = site, machine, jobs
        self.restore_unassigned = restore_unassigned  # experiment: undo a narrowing the MILP no longer backs
        self.interval_s, self.time_cap_s, self.band_step, self.max_jobs = interval_s, time_cap_s, band_step, max_jobs
        self.stats = PackStats()
        self._gi = {g.name: i for i, g in enumerate(machine.groups)}
        missing = [g.name for g in site.node_groups if g.name not in self._gi]
        if missing:
            raise ValueError(f"packing needs every node group of site {site.name} in the machine "
                             f"(missing: {', '.join(missing)})")
        _, classes = classes_from_site(site)
        self._targets: dict[tuple[str, tuple[str, ...]], frozenset[int]] = {}
        for c in classes:  # a move selects every group of its partition that carries its features
            key = (c.partition, c.features)
            self._targets[key] = self._targets.get(key, frozenset()) | {self._gi[c.pool]}
        self._part_groups = {p.name: {self._gi[g] for g in p.node_groups} for p in site.partitions if p.state == "UP"}
        self._pending: dict[int, PendingJob] = {}
        self._narrowed: dict[tuple[Req, frozenset[int]], Req] = {}
        self._last: tuple = ()

    # --- inputs ----------------------------------------------------------------------------------------------
    def pending_job(self, j: int, req: Req) -> PendingJob:
        """Job row ``j`` (original request ``req``) in packing's terms (cached: nothing in it changes)."""
        pj = self._pending.get(j)
        if pj is not None:
            return pj
        jobs = self.jobs
        groups = {g for g, _ in req.options}
        mask = int(jobs.arch_mask[j])
        archs = tuple(a for a in ARCHES if mask & ARCH_BIT[a])
        if jobs.gres_name[j] >= 0:
            types = {t for g in groups for (n, t) in self.machine.groups[g].gres
                     if n == jobs.gres_names[jobs.gres_name[j]]}
            typed = jobs.gres_type[j] >= 0
            flexible = not typed and len(types) > 1
            accel_types = (jobs.gres_types[jobs.gres_type[j]],) if typed else ()
        else:
            flexible, accel_types = len(archs) > 1, ()
        n = int(jobs.nodes[j])
        wclass = int(jobs.wclass[j])
        pj = self._pending[j] = PendingJob(
            job_id=str(j), per_job=Resources(cpus=float(jobs.cores[j] * n), mem_gb=float(jobs.mem_gb[j] * n),
                                             accels=float(jobs.gres_count[j] * n)),
            hours=float(jobs.limit[j]) / 3600.0,
            workload=jobs.class_names[wclass] if wclass >= 0 else (self.site.policy.default_class or ""),
            band=max(0, min(BANDS - 1, int(jobs.qos_priority[j]) // self.band_step)),
            partitions=tuple(p for p, gs in self._part_groups.items() if gs & groups), archs=archs,
            accel_types=accel_types, nodes=n, pinned=not flexible)
        return pj

    def group_states(self, c: ClusterState) -> dict[str, GroupState]:
        """Free cores, memory and first-GRES devices of each group's powered-on nodes; its powered-off count."""
        out = {}
        on = c.state == ON
        for g, spec in enumerate(self.machine.groups):
            s, e = c.start[g], c.end[g]
            up = on[s:e]
            accels = 0.0
            if spec.gres:
                col = c.keys.index(next(iter(spec.gres)))
                accels = float(c.free_g[s:e, col][up].sum())
            out[spec.name] = GroupState(
                free=Resources(cpus=float(c.free_c[s:e][up].sum()), mem_gb=float(c.free_m[s:e][up].sum()),
                               accels=accels),
                down_nodes=int((c.state[s:e] == OFF).sum()))
        return out

    # --- the step --------------------------------------------------------------------------------------------
    def decide(self, view: PackView) -> dict[int, Req]:
        """New requests for the pending jobs that packing moves (jobs already there are left out)."""
        self.stats.cycles += 1
        c = view.cluster
        pending = view.pending if self.max_jobs is None else view.pending[:self.max_jobs]
        key = (view.epoch, len(view.pending), tuple(pending[:1]), tuple(pending[-1:]))
        if key == self._last:
            return {}  # nothing started, ended or arrived since the last step: the same answer
        self._last = key
        original = {int(j): c.req(self.jobs, int(j)) for j in pending}
        jobs = [self.pending_job(j, r) for j, r in original.items()]
        t0 = time.perf_counter()
        moves, result = plan_moves(jobs, self.site, self.group_states(c), self.time_cap_s)
        if result is None:
            return {}
        took = time.perf_counter() - t0
        st = self.stats
        st.solves += 1
        st.solve_s += took
        st.max_solve_s = max(st.max_solve_s, took)
        st.statuses[result.status.value] = st.statuses.get(result.status.value, 0) + 1
        out = {}
        for m in moves:
            j = int(m.job_id)
            req = self.narrow(original[j], self._targets[(m.partition, m.features)])
            if req is not None and req != view.current(j):
                out[j] = req
        if self.restore_unassigned:
            moved = {int(m.job_id) for m in moves}
            for j, req in original.items():
                if j not in moved and not self._pending[j].pinned and view.current(j) is not req:
                    out[j] = req
        st.moves += len(out)
        return out

    def narrow(self, req: Req, groups: frozenset[int]) -> Req | None:
        """``req`` limited to ``groups`` (None if that leaves too few nodes); equal inputs give the same object."""
        key = (req, groups)
        if key not in self._narrowed:
            opts = tuple(o for o in req.options if o[0] in groups)
            whole = all(req.cores >= self.machine.groups[g].cores for g, _ in opts)
            enough = sum(self.machine.groups[g].count for g, _ in opts) >= req.nodes
            self._narrowed[key] = Req(req.nodes, req.cores, req.mem, req.gcount, opts, whole) if enough else None
        return self._narrowed[key]
