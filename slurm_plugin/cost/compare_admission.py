"""The admission daemon's routing inside the simulator: every arriving job goes through
:func:`slurm_plugin.admission.admit` (the daemon's own code, unchanged) with a
:class:`~slurm_plugin.snapshot.Snapshot` built from the simulated cluster, and the decision's ``partition`` /
``features`` narrow the job's node groups as slurmctld would apply them.

The snapshot is rebuilt at most every ``refresh_s`` simulated seconds (the daemon's snapshot refresher,
``daemon.refresh_s`` = 5 s), so decisions see the same staleness the daemon's do. Partitions are the site's
(the generated slurm.conf); calendars do not reshape them here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..admission import admit
from ..admission.request import JobRequest
from ..site import ARCHES, Site
from ..snapshot import GresCount, NodeState, PartitionState, Snapshot
from ..snapshot.constraint import constraint_matches
from ..workload.jobs import ARCH_BIT, JobTable
from ..workload.sacct import parse_timelimit
from ..sim.cluster import ClusterState, Req
from ..sim.power import BOOTING, OFF, SHUTTING

DAEMON_REFRESH_S = 5.0
_FLAGS = {OFF: ("powered_down",), BOOTING: ("powering_up",), SHUTTING: ("powering_down",)}


def job_request(jobs: JobTable, j: int) -> JobRequest:
    """What the shim would send for job row ``j``: its arch constraint (an OR of arches when it allows
    several), its GRES (untyped with a type OR-constraint when it accepts several types), nodes, CPUs, memory,
    time limit and ``--comment=class=NAME``."""
    archs = [a for a in ARCHES if int(jobs.arch_mask[j]) & ARCH_BIT[a]]
    features = "|".join(archs) or None
    gres = None
    if jobs.gres_name[j] >= 0:
        name, types = jobs.gres_names[jobs.gres_name[j]], jobs.gres_type_options(j)
        if types is not None and len(types) == 1:
            gres = f"gres:{name}:{next(iter(types))}:{int(jobs.gres_count[j])}"
        else:
            gres = f"gres:{name}:{int(jobs.gres_count[j])}"
            if types:
                features = "|".join(sorted(types)) if not features else f"({features})&({'|'.join(sorted(types))})"
    wclass = int(jobs.wclass[j])
    n = int(jobs.nodes[j])
    return JobRequest(features=features, gres=gres, min_nodes=n, num_tasks=n, cpus_per_task=int(jobs.cores[j]),
                      mem_per_node_mb=int(jobs.mem_gb[j] * 1024) or None,
                      time_limit=max(1, math.ceil(float(jobs.limit[j]) / 60.0)),
                      user_id=int(jobs.user[j]) if jobs.user[j] >= 0 else 1000,
                      comment=f"class={jobs.class_names[wclass]}" if wclass >= 0 else None)


@dataclass(frozen=True)
class _Layout:
    """The site's node names, features and partitions laid over the simulator's node indices."""

    names: tuple[str, ...]
    features: tuple[tuple[str, ...], ...]  # per group
    partitions: tuple[PartitionState, ...]
    node_parts: tuple[tuple[str, ...], ...]  # per group


def _layout(site: Site, cluster: ClusterState) -> _Layout:
    groups = cluster.machine.groups
    names = tuple(f"{g.name}-{k}" for g in groups for k in range(g.count))
    parts, node_parts = [], {g.name: [] for g in groups}
    for p in site.partitions:
        members = [n for gi, g in enumerate(groups) if g.name in p.node_groups
                   for n in names[cluster.start[gi]:cluster.end[gi]]]
        limit = parse_timelimit(p.max_time) if p.max_time not in ("INFINITE", "UNLIMITED") else None
        parts.append(PartitionState(p.name, tuple(members), p.state, p.default,
                                    None if limit is None else int(limit // 60), p.priority_tier))
        for g in p.node_groups:
            if g in node_parts:
                node_parts[g].append(p.name)
    site_groups = {g.name: g for g in site.node_groups}
    return _Layout(names, tuple(tuple(site_groups[g.name].all_features) for g in groups), tuple(parts),
                   tuple(tuple(node_parts[g.name]) for g in groups))


def cluster_snapshot(site: Site, cluster: ClusterState, now: float, layout: _Layout | None = None) -> Snapshot:
    """The simulated cluster as the daemon's snapshot: per node its state (idle/mixed/allocated, power flags),
    CPUs, memory and GRES in use, features and partitions."""
    layout = layout or _layout(site, cluster)
    keys = cluster.keys
    nodes = []
    for i, name in enumerate(layout.names):
        g = int(cluster.group[i])
        cap, free = int(cluster.cap_c[i]), int(cluster.free_c[i])
        base = "idle" if cluster.njobs[i] == 0 else ("allocated" if free == 0 else "mixed")
        gres = tuple(GresCount(n, t, int(cluster.cap_g[i, k])) for k, (n, t) in enumerate(keys) if cluster.cap_g[i, k])
        used = tuple(GresCount(n, t, int(cluster.cap_g[i, k] - cluster.free_g[i, k]))
                     for k, (n, t) in enumerate(keys) if cluster.cap_g[i, k])
        nodes.append(NodeState(name, base, _FLAGS.get(int(cluster.state[i]), ()), cap, cap - free,
                               int(cluster.cap_m[i] * 1024), int((cluster.cap_m[i] - cluster.free_m[i]) * 1024),
                               layout.features[g], layout.features[g], gres, used, layout.node_parts[g]))
    return Snapshot(tuple(nodes), layout.partitions, taken_at=now)


class AdmissionRouting:
    """Calls the daemon's :func:`~slurm_plugin.admission.admit` for each arriving job and turns its decision into
    a narrowed :class:`~slurm_plugin.sim.cluster.Req` (None: unchanged). ``stats`` counts decisions by kind."""

    def __init__(self, site: Site, jobs: JobTable, refresh_s: float = DAEMON_REFRESH_S):
        self.site, self.jobs, self.refresh_s = site, jobs, refresh_s
        self._snap: Snapshot | None = None
        self._layout: _Layout | None = None
        self._part_groups: dict[str, frozenset[int]] = {}
        self.stats = {"admitted": 0, "routed": 0, "rejected": 0}

    def route(self, j: int, now: float, cluster: ClusterState, req: Req) -> Req | None:
        if self._layout is None:
            self._layout = _layout(self.site, cluster)
            gi = {g.name: i for i, g in enumerate(cluster.machine.groups)}
            self._part_groups = {p.name: frozenset(gi[g] for g in p.node_groups if g in gi)
                                 for p in self.site.partitions}
        if self._snap is None or now - self._snap.taken_at >= self.refresh_s:
            self._snap = cluster_snapshot(self.site, cluster, now, self._layout)
        decision = admit(job_request(self.jobs, j), self._snap, self.site)
        self.stats["admitted"] += 1
        if decision.action != "accept":
            self.stats["rejected"] += 1  # the simulator still runs it as submitted (the trace ran it)
            return None
        groups = {g for g, _ in req.options}
        part = decision.changes.get("partition")
        if part:
            groups &= self._part_groups.get(str(part), frozenset())
        feats = decision.changes.get("features")
        if feats:
            groups = {g for g in groups if constraint_matches(str(feats), self._layout.features[g])}
        return self._narrow(req, groups, cluster)

    def _narrow(self, req: Req, groups: set[int], cluster: ClusterState) -> Req | None:
        opts = tuple(o for o in req.options if o[0] in groups)
        if opts == req.options or not opts or sum(cluster.machine.groups[g].count for g, _ in opts) < req.nodes:
            return None
        self.stats["routed"] += 1
        whole = all(req.cores >= cluster.machine.groups[g].cores for g, _ in opts)
        return Req(req.nodes, req.cores, req.mem, req.gcount, opts, whole)
