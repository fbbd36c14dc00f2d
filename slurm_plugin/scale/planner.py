"""Power planning for the live cluster: a pure function from a snapshot to power actions with reasons.

Per node group (``want`` = how many nodes should be on)::

    want = busy + backlog_nodes + warm + pid_extra      clamped to [min_on, max_on]

* ``busy``: nodes running jobs (never powered down);
* ``backlog_nodes``: nodes needed by pending jobs that this group serves (a job several groups could serve is
  counted against the cheapest of them, by ``cost_per_hour``) beyond the idle and booting nodes it already has;
* ``warm``: idle nodes kept on for short jobs (the warm pool);
* ``pid_extra``: the PID controller's correction on utilization (``e = target - actual``; a negative output
  means the group runs hotter than the target and gets ``ceil(-u * on)`` extra nodes; no extra below target).

More nodes than wanted: idle nodes idle for at least ``idle_grace_s`` are powered down, the longest idle first.
Nodes booting for longer than ``resume_timeout`` (or that Slurm marked down for missing it) are force-powered
down so the next resume starts clean. What must survive between cycles (when each node went idle, PID state,
when a boot started) is the explicit :class:`ScaleMemory`, returned anew every cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..decision import Decision, PowerNodes
from ..site import NodeGroup, Site
from ..snapshot import JobState, NodeState, Snapshot
from ..snapshot.constraint import constraint_matches
from .pid import DEFAULT_GAINS, PidGains, PidState, pid_step


@dataclass(frozen=True)
class GroupLimits:
    min_on: int = 0
    max_on: int | None = None
    warm: int = 1


@dataclass(frozen=True)
class ScaleConfig:
    idle_grace_s: float = 300.0
    target_util: float = 0.75
    gains: PidGains = DEFAULT_GAINS
    groups: dict[str, GroupLimits] = field(default_factory=dict)
    default_limits: GroupLimits = GroupLimits()

    def limits(self, group: str) -> GroupLimits:
        return self.groups.get(group, self.default_limits)


@dataclass(frozen=True)
class ScaleMemory:
    """State carried from one cycle to the next on purpose (the daemon persists it)."""

    idle_since: dict[str, float] = field(default_factory=dict)
    booting_since: dict[str, float] = field(default_factory=dict)
    pid: dict[str, PidState] = field(default_factory=dict)
    last_t: float | None = None


def _busy(n: NodeState) -> bool:
    return n.alloc_cpus > 0 or n.state in ("allocated", "mixed", "completing")


def _booting(n: NodeState) -> bool:
    return "powering_up" in n.flags or "power_up" in n.flags


def _off(n: NodeState) -> bool:
    return n.powered_down and "powering_down" not in n.flags


def _stuck_by_slurm(n: NodeState) -> bool:
    return n.state == "down" and "ResumeTimeout" in n.reason


def _job_fits_group(job: JobState, group: NodeGroup) -> bool:
    if not constraint_matches(job.features, group.all_features):
        return False
    have = {(n, t): c for n, t, c in group.gres}
    for g in job.gres:
        total = sum(c for (n, t), c in have.items() if n == g.name and (not g.type or g.type == t))
        if total < g.count:
            return False
    return True


def backlog_nodes(jobs: list[JobState], group: NodeGroup, ready: list[NodeState], booting: list[NodeState]) -> int:
    """Nodes the ``jobs`` pending for ``group`` occupy: the ready/booting ones they will take, plus new nodes
    for the CPUs and per-node GRES that ready and booting nodes cannot cover."""
    if not jobs:
        return 0
    cores = group.cpu.cores * group.cpu.threads_per_core
    deficit = sum((j.cpus or 1) for j in jobs) - sum(n.free_cpus for n in ready) - cores * len(booting)
    extra = math.ceil(max(deficit, 0) / cores)
    for name, _, per_node in group.gres:
        need = sum(g.count * (j.node_count or 1) for j in jobs for g in j.gres if g.name == name)
        free = sum(n.gres_free(name) for n in ready) + per_node * len(booting)
        extra = max(extra, math.ceil(max(need - free, 0) / per_node))
    extra = max(extra, max((j.node_count or 1) for j in jobs) - len(ready) - len(booting))
    return min(len(ready) + len(booting), len(jobs)) + extra


def job_groups(job: JobState, site: Site, snapshot: Snapshot) -> list[NodeGroup]:
    """Node groups that could run ``job``: in its partitions, matching its constraint and GRES."""
    parts = [p for p in job.partition.split(",") if p] or (
        [snapshot.default_partition.name] if snapshot.default_partition else [])
    hosts = {h for p in parts for h in (snapshot.partition(p).nodes if snapshot.partition(p) else ())}
    return [g for g in site.node_groups if hosts & set(g.hostnames) and _job_fits_group(job, g)]


def plan_power(snapshot: Snapshot, site: Site, config: ScaleConfig, memory: ScaleMemory,
               now: float) -> tuple[Decision, ScaleMemory]:
    """Power actions for this cycle and the memory for the next one. Pure: reads only its arguments."""
    backlog: dict[str, list[JobState]] = {}
    for job in snapshot.jobs:
        if job.pending and job.reason not in ("JobHeldUser", "JobHeldAdmin", "BeginTime", "Dependency"):
            groups = job_groups(job, site, snapshot)
            if groups:
                backlog.setdefault(min(groups, key=lambda g: (g.cost_per_hour, g.name)).name, []).append(job)
    dt = max(now - memory.last_t, 1.0) if memory.last_t is not None else 1.0
    idle_since, booting_since, pid = {}, {}, dict(memory.pid)
    actions: list[PowerNodes] = []
    for group in site.node_groups:
        nodes = [n for n in map(snapshot.node, group.hostnames) if n is not None]
        if not nodes:
            continue
        lim = config.limits(group.name)
        busy = [n for n in nodes if _busy(n)]
        booting = [n for n in nodes if _booting(n)]
        off = [n for n in nodes if _off(n) and not _booting(n)]
        idle = [n for n in nodes if n.usable_now and not _busy(n)]
        on = [n for n in nodes if not n.powered_down and not _booting(n)]
        for n in idle:
            idle_since[n.name] = memory.idle_since.get(n.name, now)
        for n in booting:
            booting_since[n.name] = memory.booting_since.get(n.name, now)
        stuck = [n.name for n in nodes if _stuck_by_slurm(n) or (
            _booting(n) and now - booting_since[n.name] > site.slurm.resume_timeout)]
        if stuck:
            actions.append(PowerNodes(tuple(stuck), "POWER_DOWN_FORCE",
                                      f"{group.name}: stuck powering up past ResumeTimeout "
                                      f"({site.slurm.resume_timeout} s); forced down for a clean resume"))
        jobs = backlog.get(group.name, [])
        ready = [n for n in on if n.usable_now]
        needed = backlog_nodes(jobs, group, ready, booting)
        cpus_on = sum(n.cpus for n in on) or 1
        util = sum(n.alloc_cpus for n in on) / cpus_on
        u, pid[group.name] = pid_step(config.gains, memory.pid.get(group.name, PidState()), config.target_util,
                                      util, dt)
        pid_extra = math.ceil(-u * len(on)) if u < 0 else 0
        want = len(busy) + needed + min(lim.warm, len(nodes)) + pid_extra
        want = max(lim.min_on, min(want, lim.max_on if lim.max_on is not None else len(nodes), len(nodes)))
        have = len(on) + len(booting)
        if want > have and off:
            up = tuple(n.name for n in off[: want - have])
            actions.append(PowerNodes(up, "POWER_UP", (
                f"{group.name}: {len(jobs)} pending job(s) need {needed} node(s), {len(idle)} idle and "
                f"{len(booting)} booting; utilization {util:.0%} (target {config.target_util:.0%}); "
                f"want {want} on, have {have}")))
        elif want < have:
            calm = sorted((n for n in idle if now - idle_since[n.name] >= config.idle_grace_s),
                          key=lambda n: idle_since[n.name])
            down = tuple(n.name for n in calm[: have - want])
            if down:
                actions.append(PowerNodes(down, "POWER_DOWN", (
                    f"{group.name}: idle >= {config.idle_grace_s:.0f} s; {len(on)} on, {len(busy)} busy, "
                    f"want {want} (warm pool {lim.warm}, {len(jobs)} pending)")))
    new_memory = ScaleMemory(idle_since, booting_since, pid, now)
    return Decision(tuple(actions), "scale"), new_memory
