"""Power planning for the live cluster: a pure function from a snapshot to power actions with reasons.

Per node group (``want`` = how many nodes should be on)::

    want = busy + backlog_nodes + warm + pid_extra      clamped to [min_on, max_on]

* ``busy``: nodes running jobs (never powered down);
* ``backlog_nodes``: nodes needed by pending jobs that this group serves (a job several groups could serve is
  counted against the cheapest of them, by ``cost_per_hour``) beyond the idle and booting nodes it already has;
* ``warm``: idle nodes kept on for short jobs (the warm pool): ``GroupLimits.warm``, or with
  ``ScaleConfig.wait_price_w`` the break-even rule of :mod:`.warm` on the group's arrival rate (jobs submitted
  within ``rate_window_s`` that are still in the queue), which also sets the idle grace per group; then the
  architecture controller (:mod:`.arch`) moves warm pools to the cheapest CPU group when portable work dominates
  the jobs submitted within ``rate_window_s`` (:func:`.arch.arch_demand`, the simulator's quantity);
* ``pid_extra`` (with ``ScaleConfig.pid``): the PID controller's headroom on node utilization (busy / on), the
  simulator's controller (:func:`.pid.pid_headroom`, gains per minute, ``dt`` = seconds since the last cycle):
  a group hotter than the target gets extra nodes, none below target.

More nodes than wanted: idle nodes idle for at least the grace are powered down, the longest idle first
(:func:`.warm.group_power`, the same step the simulator's policy takes). With ``ScaleConfig.quiet_grace_s`` (no
warm pool): the demand-aware idle timer (:func:`.warm.demand_timer`) picks them: idle nodes beyond the nodes
asked for by jobs submitted within ``rate_window_s`` (scaled to ``idle_grace_s``) go down after the quiet grace.
Node power is the state machine of :mod:`.power_state`, one persisted record per node: each cycle first
syncs the records from Slurm's flags (passive edges), then remediates failed power-ups with bounded retries
(:mod:`.remediate`), then plans the groups from the records (failed and held nodes are left out) and records
its own requests (active edges). What must survive between cycles (when each node went idle, PID state, the
power records) is the explicit :class:`ScaleMemory`, returned anew every cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..decision import Cause, Decision, PowerNodes
from ..snapshot import JobState, NodeState, Snapshot
from ..snapshot.constraint import constraint_matches
from .arch import (DEFAULT_DOMINANCE, DEFAULT_ENERGY_PRICE_KWH, OTHER, ArchDemand, ArchGroup, ArchShift, arch_demand,
                   job_kind, plan_arch, warm_after)
from .capacity_plan import CapacityPlan
from .pid import DEFAULT_GAINS, PidGains, PidState, pid_headroom
from .power_state import Event, NodePower, Power
from .remediate import RetryPolicy, remediate, sync_records
from .warm import (DEFAULT_MIN_GRACE_S, DEFAULT_WINDOW_S, GroupPower, WarmTarget, demand_timer, group_power,
                   timer_keep, warm_target)

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import NodeGroup, Site


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
    # the break-even rule (scale/warm.py) instead of fixed warm pools and grace: watts a second of wait is worth
    wait_price_w: float | None = None
    min_grace_s: float = DEFAULT_MIN_GRACE_S
    rate_window_s: float = DEFAULT_WINDOW_S
    # the demand-aware idle timer (scale/warm.py, chosen by `hetsched tune`): with wait_price_w None and no warm
    # pool, idle nodes beyond the expected node demand go down after this, every idle node after idle_grace_s
    quiet_grace_s: float | None = None
    # the architecture controller (scale/arch.py): move warm pools to the cheapest CPU group for portable work
    arch: bool = True
    arch_dominance: float = DEFAULT_DOMINANCE
    energy_price_kwh: float = DEFAULT_ENERGY_PRICE_KWH
    # PID headroom on utilization (opt-in: in the simulator it cost ~20 points of energy, results/scale)
    pid: bool = False
    # failed power-ups: bounded retries with backoff, then the node is left DOWN (scale/remediate.py)
    retry: RetryPolicy = RetryPolicy()
    # the hourly capacity plan of `hetsched cost plan` (scale/capacity_plan.py): a floor of nodes on per hour
    plan: CapacityPlan | None = None

    def limits(self, group: str) -> GroupLimits:
        return self.groups.get(group, self.default_limits)


@dataclass(frozen=True)
class ScaleMemory:
    """State carried from one cycle to the next on purpose (the daemon persists it)."""

    idle_since: dict[str, float] = field(default_factory=dict)
    pid: dict[str, PidState] = field(default_factory=dict)
    last_t: float | None = None
    power: dict[str, NodePower] = field(default_factory=dict)


def out_of_supply(n: NodeState) -> bool:
    """A drained node without running work (an admin's drain, or the health check's for a fault: reason
    ``hetsched: health ...``): never powered up, never counted as capacity; a draining node still running jobs
    counts as busy until they end."""
    return any(f in ("drain", "drained") for f in n.flags) and not _busy(n)


def _busy(n: NodeState) -> bool:
    return n.alloc_cpus > 0 or n.state in ("allocated", "mixed", "completing")


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
    for the CPUs and per-node GRES that ready and booting nodes cannot cover (a pending array's record asks
    for each of its tasks)."""
    if not jobs:
        return 0
    cores = group.cpu.cores * group.cpu.threads_per_core
    asked = sum((j.cpus or 1) * j.task_count for j in jobs)
    deficit = asked - sum(n.free_cpus for n in ready) - cores * len(booting)
    extra = math.ceil(max(deficit, 0) / cores)
    for name, _, per_node in group.gres:
        need = sum(g.count * (j.node_count or 1) * j.task_count for j in jobs for g in j.gres if g.name == name)
        free = sum(n.gres_free(name) for n in ready) + per_node * len(booting)
        extra = max(extra, math.ceil(max(need - free, 0) / per_node))
    extra = max(extra, max((j.node_count or 1) for j in jobs) - len(ready) - len(booting))
    return min(len(ready) + len(booting), sum(j.task_count for j in jobs)) + extra


def job_groups(job: JobState, site: Site, snapshot: Snapshot) -> list[NodeGroup]:
    """Node groups that could run ``job``: in its partitions, matching its constraint and GRES."""
    parts = [p for p in job.partition.split(",") if p] or (
        [snapshot.default_partition.name] if snapshot.default_partition else [])
    hosts = {h for p in parts for h in (snapshot.partition(p).nodes if snapshot.partition(p) else ())}
    return [g for g in site.node_groups if hosts & set(g.hostnames) and _job_fits_group(job, g)]


# Why a pending job may wait that no node powered up changes: a time or another job, a partition that runs no
# work or refuses the job, or a limit of its account or QOS (Slurm's reason codes, 22.05 and 24.11).
NOT_FOR_NODES = frozenset({"BeginTime", "Dependency", "DependencyNeverSatisfied", "PartitionDown",
                           "PartitionInactive", "PartitionTimeLimit", "PartitionNodeLimit", "PartitionConfig",
                           "InvalidAccount", "InvalidQOS"})
LIMIT_PREFIXES = ("AssocGrp", "AssocMax", "QOSGrp", "QOSMax", "QOSMin")


def _queued(job: JobState) -> bool:
    """A pending job that more powered nodes could start: the planner's backlog."""
    return (job.pending and not job.held and job.reason not in NOT_FOR_NODES
            and not job.reason.startswith(LIMIT_PREFIXES))


def _cheapest(groups: list[NodeGroup]) -> NodeGroup:
    return min(groups, key=lambda g: (g.cost_per_hour, g.name))


@dataclass(frozen=True)
class _Demand:
    """What the snapshot's jobs ask of each group: the backlog (pending jobs, each against its cheapest group),
    arrivals per group within the rate window, and the architecture controller's demand (:func:`.arch.arch_demand`
    over the jobs submitted within the window, as the simulator computes it; ``groups`` = site.node_groups)."""

    backlog: dict[str, list[JobState]]
    arrivals: dict[str, int]
    arrival_nodes: dict[str, int]
    arch: ArchDemand


def _arch_demand(rows: list[tuple[float, float, int, int]], now: float, window_s: float) -> ArchDemand:
    """:func:`.arch.arch_demand` over ``rows`` (submit, cores, kind, group mask) of the snapshot's jobs."""
    if not rows:
        return ArchDemand(0.0, 0.0, 0)
    import numpy as np

    rows.sort(key=lambda r: r[0])
    submit, cores, kind, mask = (np.array(col) for col in zip(*rows))
    return arch_demand(submit, cores.astype(float), kind, mask.astype(np.int64), now, window_s)


def _demand(snapshot: Snapshot, site: Site, now: float, window_s: float, arch: bool) -> _Demand:
    backlog: dict[str, list[JobState]] = {}
    arrivals: dict[str, int] = {}
    arrival_nodes: dict[str, int] = {}
    rows: list[tuple[float, float, int, int]] = []
    index = {g.name: i for i, g in enumerate(site.node_groups)}
    # jobs of one shape fit the same groups: one look per shape for (cheapest group, arch kind, CPU group mask)
    shapes: dict[tuple, tuple[str, int, int] | None] = {}
    for job in snapshot.jobs:
        queued = _queued(job)
        if not (queued or job.running):
            continue
        shape = (job.partition, job.features, job.gres)
        if shape not in shapes:
            groups = job_groups(job, site, snapshot)
            cpu = [g for g in groups if not g.gres]
            shapes[shape] = (_cheapest(groups).name, job_kind(bool(job.gres), [g.cpu.arch for g in cpu]),
                             sum(1 << index[g.name] for g in cpu)) if groups else None
        if shapes[shape] is None:
            continue
        cheapest, kind, mask = shapes[shape]
        if queued:
            backlog.setdefault(cheapest, []).append(job)
        if job.submit_time is None or job.submit_time < now - window_s:
            continue
        arrivals[cheapest] = arrivals.get(cheapest, 0) + 1
        arrival_nodes[cheapest] = arrival_nodes.get(cheapest, 0) + (job.node_count or 1)
        if arch and kind != OTHER and job.submit_time <= now:  # arch_demand reads (now - window_s, now] only
            rows.append((float(job.submit_time), float(job.cpus or 1), kind, mask))
    return _Demand(backlog, arrivals, arrival_nodes, _arch_demand(rows, now, window_s))


def _arch_shifts(site: Site, config: ScaleConfig, demand: _Demand, warm: dict[str, int],
                 counts: dict[str, tuple[int, int]]) -> list[ArchShift]:
    common = [g for i, g in enumerate(site.node_groups) if demand.arch.common >> i & 1]
    groups = [ArchGroup(g.name, g.cpu.arch, g.cpu.cores * g.cpu.threads_per_core, g.cost_per_hour, g.power.busy_w,
                        warm[g.name], counts[g.name][1] - counts[g.name][0] - warm[g.name])
              for g in common if g.name in counts]
    return plan_arch(groups, demand.arch.portable_cores, demand.arch.pinned_cores, config.arch_dominance,
                     config.energy_price_kwh)


def _demand_timer_step(step: GroupPower, idle_for: list[float], config: ScaleConfig, nodes_arrived: int,
                       have: int) -> GroupPower:
    """The demand-aware idle timer's power-downs (longest idle first), never below the step's ``want``."""
    keep = timer_keep(nodes_arrived / config.rate_window_s, config.idle_grace_s)
    down = sorted(demand_timer(idle_for, keep, config.idle_grace_s, config.quiet_grace_s),
                  key=lambda i: -idle_for[i])
    return GroupPower(0, tuple(down[: max(have - step.want, 0)]), step.want)


def plan_power(snapshot: Snapshot, site: Site, config: ScaleConfig, memory: ScaleMemory,
               now: float) -> tuple[Decision, ScaleMemory]:
    """Power actions for this cycle and the memory for the next one. Pure: reads only its arguments."""
    demand = _demand(snapshot, site, now, config.rate_window_s, config.arch)
    dt_s = max(now - memory.last_t, 1.0) if memory.last_t is not None else None  # None: first cycle
    idle_since, pid = {}, dict(memory.pid)
    members = {g.name: [n for n in map(snapshot.node, g.hostnames) if n is not None] for g in site.node_groups}
    shown = {n.name: n for nodes in members.values() for n in nodes}
    records = sync_records(shown.values(), memory.power, now, site.slurm.resume_timeout, config.retry)
    actions, records = remediate(records, shown, now, config.retry)
    remediated = {n for a in actions for n in a.nodes}
    members = {name: [n for n in nodes if n.name not in remediated and not out_of_supply(n)
                      and records[n.name].state not in (Power.FAILED, Power.HELD)] for name, nodes in members.items()}
    targets: dict[str, WarmTarget] = {}
    for group in site.node_groups:
        lim = config.limits(group.name)
        if config.wait_price_w is None:
            targets[group.name] = WarmTarget(lim.warm, config.idle_grace_s, f"warm pool {lim.warm}")
        else:
            rate = demand.arrivals.get(group.name, 0) / config.rate_window_s
            targets[group.name] = warm_target(rate, group.power.idle_w, group.boot_time_s, group.count,
                                              config.wait_price_w, config.min_grace_s)
    warm = {name: min(t.warm, len(members[name])) for name, t in targets.items()}
    shifts = []
    if config.arch:
        counts = {name: (sum(1 for n in nodes if _busy(n)), len(nodes)) for name, nodes in members.items() if nodes}
        shifts = _arch_shifts(site, config, demand, warm, counts)
        warm = warm_after(shifts, warm)
    shift_why = {s.source: s.reason for s in shifts} | {s.target: s.reason for s in shifts}
    for group in site.node_groups:
        nodes = members[group.name]
        if not nodes:
            continue
        lim = config.limits(group.name)
        state = {n.name: records[n.name].state for n in nodes}
        busy = [n for n in nodes if _busy(n)]
        booting = [n for n in nodes if state[n.name] == Power.POWERING_UP]
        off = [n for n in nodes if state[n.name] == Power.OFF]
        idle = [n for n in nodes if n.usable_now and not _busy(n)]
        on = [n for n in nodes if state[n.name] == Power.ON]
        for n in idle:
            idle_since[n.name] = memory.idle_since.get(n.name, now)
        jobs = demand.backlog.get(group.name, [])
        ready = [n for n in on if n.usable_now]
        needed = backlog_nodes(jobs, group, ready, booting)
        busy_on = sum(1 for n in on if _busy(n))
        util = busy_on / len(on) if on else 0.0
        head, pid[group.name] = pid_headroom(config.gains, memory.pid.get(group.name, PidState()),
                                             config.target_util, busy_on, len(on), dt_s)
        pid_extra = head if config.pid else 0
        target = targets[group.name]
        planned = config.plan.nodes_on(group.name, now) if config.plan is not None else None
        floor = max(lim.min_on, planned or 0)
        step = group_power(len(busy), [now - idle_since[n.name] for n in idle], len(booting), len(off),
                           needed + warm[group.name] + pid_extra, target.grace_s, floor, lim.max_on,
                           other_on=len(on) - len(busy) - len(idle))
        if config.quiet_grace_s is not None and not step.up:
            step = _demand_timer_step(step, [now - idle_since[n.name] for n in idle], config,
                                      demand.arrival_nodes.get(group.name, 0), len(on) + len(booting))
        have = len(on) + len(booting)
        why_warm = (f"warm pool {warm[group.name]} ({target.reason}"
                    + (f"; {shift_why[group.name]}" if group.name in shift_why else "") + ")"
                    + (f"; {config.plan.why(group.name, now)}" if planned is not None else ""))
        if step.up:
            cause = Cause.BACKLOG if needed > have else Cause.ADMIN_FLOOR if lim.min_on > have else \
                Cause.CAPACITY_PLAN if (planned or 0) > have else Cause.WARM_POOL
            actions.append(PowerNodes(tuple(n.name for n in off[: step.up]), "POWER_UP", (
                f"{group.name}: {len(jobs)} pending job(s) need {needed} node(s), {len(idle)} idle and "
                f"{len(booting)} booting; utilization {util:.0%} (target {config.target_util:.0%}); "
                f"want {step.want} on, have {have}; {why_warm}"), cause))
        elif step.down:
            actions.append(PowerNodes(tuple(idle[i].name for i in step.down), "POWER_DOWN", (
                f"{group.name}: idle >= {target.grace_s:.0f} s; {len(on)} on, {len(busy)} busy, "
                f"want {step.want} ({why_warm}, {len(jobs)} pending)"), Cause.IDLE_GRACE))
    for a in actions:
        event = {"POWER_UP": Event.REQUEST_UP, "POWER_DOWN": Event.REQUEST_DOWN}.get(a.action)
        if event and a.cause != Cause.RETRY:  # remediation already recorded its own edges
            for n in a.nodes:
                records[n] = records[n].apply(event, now, f"{a.cause.value}: {a.reason}")
    return Decision(tuple(actions), "scale"), ScaleMemory(idle_since, pid, now, records)
