"""The hetsched power policies in the simulator, on the decision code the live planner uses (:mod:`.warm`).

:class:`WarmPoolPower`, per node group and control period:

* ``wait_price_w`` set (the default, "hetsched"): the break-even rule (:func:`.warm.warm_target`) with the
  group's arrival rate over the last ``window_s`` (from :attr:`PowerView.arrived`, jobs counted against the
  cheapest group they may use): quiet groups and expensive idle nodes go down after ``min_grace_s``, busy groups
  keep ``rate x break-even`` nodes warm;
* ``wait_price_w=None``: the fixed rule of the first round (grace ``grace_s``, ``warm_fraction`` of each group,
  or ``warm_nodes`` per group as the live planner's ``GroupLimits.warm``);
* ``use_pid``: plus the PID controller's headroom when a group runs hotter than ``target_util``;
* ``quiet_grace_s`` set (with ``wait_price_w=None``): the demand-aware idle timer (:func:`.warm.demand_timer`):
  every idle node goes down after ``grace_s`` (Slurm's SuspendTime), and idle nodes beyond the node demand
  expected within ``grace_s`` (node arrivals over ``window_s``, from ``demand``: :class:`NodeArrivals`) after
  ``quiet_grace_s``; it never powers up (jobs boot nodes, as under the timer) and runs on the timer's clock (a
  quarter of its shorter grace). With ``quiet_grace_s = grace_s`` its schedule is :class:`.hooks.IdleSuspend`'s
  at ``grace_s``, node for node (``tests/unit/tune/test_power.py``);
* ``forecast`` (``"max"`` or ``"mean"``, off by default): the rate is combined with the rate this policy saw at
  the same time ``forecast_days`` before, ``forecast_lead_s`` ahead (:func:`slurm_plugin.scale.forecast.forecast_rate`, from the
  hourly arrivals it recorded itself). Measured not to meet the issue's goal at one setting (results/scale).

Then :func:`.warm.group_power` picks the nodes. Jobs placed on off nodes boot them (the engine does that, as
Slurm does), so the simulator passes no backlog. :class:`PidPower` is the PID controller alone, both ways, for
the step and diurnal stability runs (:mod:`.scaling_eval`). Unlike the live planner these keep their state (PID,
arrival history) on the object, because the simulator calls one policy object for a whole run.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace

import numpy as np

from ..scale.arch import ArchGroup, arch_demand, job_kind, plan_arch, warm_after
from ..scale.capacity_plan import CapacityPlan
from ..scale.forecast import HOUR_S, forecast_rate
from ..scale.pid import DEFAULT_GAINS, PidGains, PidState, pid_headroom, pid_step
from ..scale.warm import (DEFAULT_MIN_GRACE_S, DEFAULT_WAIT_PRICE_W, DEFAULT_WINDOW_S, demand_timer, group_power,
                          timer_keep, warm_target)
from ..workload.fit import eligible_groups, fitting_groups
from ..workload.jobs import JobTable
from .machine import Machine
from .power import BOOTING, OFF, ON
from .views import PowerView


def _idle_for_positions(view: PowerView, mask: np.ndarray) -> tuple[np.ndarray, list[float]]:
    idle = np.flatnonzero(mask & (view.state == ON) & (view.idle_for >= 0))
    return idle, view.idle_for[idle].tolist()


@dataclass
class ArrivalRate:
    """Jobs per second per group over the last ``window_s``, from the cumulative counts the engine reports."""

    window_s: float
    _seen: deque = field(default_factory=deque, init=False)

    def update(self, now: float, arrived: np.ndarray) -> np.ndarray:
        self._seen.append((now, arrived))
        while len(self._seen) > 1 and self._seen[1][0] <= now - self.window_s:
            self._seen.popleft()
        t0, a0 = self._seen[0]
        return (arrived - a0) / max(now - t0, self.window_s)


@dataclass
class PortableDemand:
    """The architecture controller's demand in the simulator: :func:`~slurm_plugin.scale.arch.arch_demand` over
    the trace (the live planner calls the same function on the snapshot's jobs). Per job its cores, its kind and
    its CPU groups as a bit mask, computed once."""

    machine: Machine
    jobs: JobTable
    window_s: float

    def __post_init__(self) -> None:
        cpu = [not g.gres for g in self.machine.groups]
        memo: dict[tuple, tuple[int, int]] = {}
        kind, mask = np.zeros(len(self.jobs), dtype=np.int8), np.zeros(len(self.jobs), dtype=np.int64)
        for i in range(len(self.jobs)):
            key = (int(self.jobs.arch_mask[i]), int(self.jobs.gres_name[i]), int(self.jobs.gres_type[i]))
            if key not in memo:
                groups = [g for g in eligible_groups(self.jobs, i, self.machine) if cpu[g]]
                memo[key] = (job_kind(self.jobs.gres_name[i] >= 0, [self.machine.groups[g].arch for g in groups]),
                             sum(1 << g for g in groups))
            kind[i], mask[i] = memo[key]
        self._kind, self._mask = kind, mask
        self._cores = self.jobs.procs.astype(float)

    def at(self, now: float) -> tuple[float, float, list[int]]:
        """(portable cores, pinned cores, CPU groups every portable job may use) over the window before ``now``."""
        d = arch_demand(self.jobs.submit, self._cores, self._kind, self._mask, now, self.window_s)
        return d.portable_cores, d.pinned_cores, [g for g in range(len(self.machine.groups)) if d.common >> g & 1]


@dataclass
class NodeArrivals:
    """Nodes asked for per group by the jobs submitted within a window before ``now`` (only the past is read),
    each job counted against the cheapest group (by cost per hour, then order) one of whose nodes holds it."""

    machine: Machine
    jobs: JobTable

    def __post_init__(self) -> None:
        n, groups = len(self.jobs), len(self.machine.groups)
        group = np.zeros(n, dtype=np.int64)
        if groups > 1:
            memo: dict[tuple, int] = {}
            cost = [(g.cost_per_hour, gi) for gi, g in enumerate(self.machine.groups)]
            j = self.jobs
            for i in range(n):
                key = (int(j.arch_mask[i]), int(j.gres_name[i]), int(j.gres_type[i]), int(j.gres_count[i]),
                       int(j.cores[i]), float(j.mem_gb[i]))
                if key not in memo:
                    fit = fitting_groups(j, i, self.machine) or list(range(groups))
                    memo[key] = min(fit, key=lambda g: cost[g])
                group[i] = memo[key]
        nodes = self.jobs.nodes.astype(float)
        # per group, cumulative nodes asked for up to and including each job (in submit order)
        self._cum = [np.concatenate(([0.0], np.cumsum(np.where(group == g, nodes, 0.0)))) for g in range(groups)]

    def rate(self, now: float, window_s: float) -> list[float]:
        """Nodes per second per group over ``(now - window_s, now]``."""
        lo, hi = np.searchsorted(self.jobs.submit, [now - window_s, now], side="right")
        return [float(c[hi] - c[lo]) / window_s for c in self._cum]


@dataclass
class WarmPoolPower:
    machine: Machine
    grace_s: float = 120.0
    warm_fraction: float = 0.05
    wait_price_w: float | None = DEFAULT_WAIT_PRICE_W
    window_s: float = DEFAULT_WINDOW_S
    min_grace_s: float = DEFAULT_MIN_GRACE_S
    target_util: float = 0.75
    use_pid: bool = False  # PID headroom on utilization; measured to cost energy here (results/scale)
    gains: PidGains = DEFAULT_GAINS
    interval_s: float = 60.0
    name: str = "hetsched"
    portable: PortableDemand | None = None  # set: the architecture controller moves warm pools (scale/arch.py)
    forecast: str | None = None  # "max"/"mean": combine with the same time on earlier days (scale/forecast.py)
    forecast_days: tuple[int, ...] = (1,)
    forecast_lead_s: float = 1800.0
    warm_nodes: int | None = None  # without wait price: this many per group (the live planner's GroupLimits.warm)
    quiet_grace_s: float | None = None  # without wait price: the demand-aware idle timer (needs ``demand``)
    demand: NodeArrivals | None = None
    plan: CapacityPlan | None = None  # the hourly capacity plan (scale/capacity_plan.py): nodes on per group, a floor
    _pid: list[PidState] = field(default_factory=list, init=False)
    _group: np.ndarray = field(default=None, init=False)  # type: ignore[assignment]
    headroom: list[list[int]] = field(default_factory=list, init=False)  # per tick, per group (for plots)

    def __post_init__(self) -> None:
        counts = [g.count for g in self.machine.groups]
        self._warm = [min(self.warm_nodes, c) if self.warm_nodes is not None else int(self.warm_fraction * c)
                      for c in counts]
        self._group = np.repeat(np.arange(len(counts)), counts)
        self._pid = [PidState() for _ in counts]
        self._rate = ArrivalRate(self.window_s)
        self._hourly: list[dict[int, float]] = [{} for _ in counts]  # arrivals per group and hour (forecast)
        self._last_arrived: np.ndarray | None = None
        self._since: float | None = None
        if self.quiet_grace_s is not None:
            if self.wait_price_w is not None or self.demand is None or self.quiet_grace_s < 0 or self.grace_s < 0:
                raise ValueError("the demand-aware idle timer (quiet_grace_s) needs wait_price_w=None, node "
                                 "arrivals (demand) and non-negative graces")
            self.interval_s = max(min(self.grace_s, self.quiet_grace_s) / 4, 1.0)  # the timer's own clock

    def _record(self, now: float, arrived: np.ndarray) -> None:
        """Add the arrivals since the last period to the current hour's bin (what the policy has seen)."""
        if self._last_arrived is None:
            self._since = now
        else:
            h = int(now // HOUR_S)
            for g, d in enumerate(arrived - self._last_arrived):
                if d:
                    self._hourly[g][h] = self._hourly[g].get(h, 0.0) + float(d)
        self._last_arrived = np.array(arrived, dtype=float)

    def _targets(self, view: PowerView) -> list[tuple[int, float]]:
        """(warm nodes, grace) per group."""
        if self.wait_price_w is None or view.arrived is None:
            return [(w, self.grace_s) for w in self._warm]
        rates = self._rate.update(view.now, view.arrived)
        if self.forecast is not None:
            self._record(view.now, view.arrived)
            rates = [forecast_rate(float(r), self._hourly[g], view.now, self.window_s, self._since,
                                   self.forecast_days, self.forecast_lead_s, self.forecast).rate
                     for g, r in enumerate(rates)]
        out = []
        for g, rate in zip(self.machine.groups, rates):
            t = warm_target(float(rate), g.idle_w, g.boot_s, g.count, self.wait_price_w, self.min_grace_s)
            out.append((t.warm, t.grace_s))
        return out

    def _shift(self, view: PowerView, targets: list[tuple[int, float]], busy: np.ndarray) -> list[tuple[int, float]]:
        """The targets after the architecture controller moved warm pools (unchanged without ``portable``)."""
        if self.portable is None:
            return targets
        portable, pinned, common = self.portable.at(view.now)
        gs = self.machine.groups
        groups = [ArchGroup(gs[g].name, gs[g].arch, gs[g].cores, gs[g].cost_per_hour, gs[g].busy_w, targets[g][0],
                            gs[g].count - int((busy & (self._group == g)).sum()) - targets[g][0]) for g in common]
        warm = warm_after(plan_arch(groups, portable, pinned), {g.name: w for g, (w, _) in zip(gs, targets)})
        return [(warm[g.name], grace) for g, (_, grace) in zip(gs, targets)]

    def _demand_timer(self, view: PowerView) -> tuple[np.ndarray, np.ndarray]:
        downs = []
        for gi, rate in enumerate(self.demand.rate(view.now, self.window_s)):
            idle, idle_for = _idle_for_positions(view, self._group == gi)
            keep = timer_keep(rate, self.grace_s)
            downs.append(idle[list(demand_timer(idle_for, keep, self.grace_s, self.quiet_grace_s))])
        return np.sort(np.concatenate(downs)).astype(np.int64), np.empty(0, dtype=np.int64)

    def decide(self, view: PowerView) -> tuple[np.ndarray, np.ndarray]:
        if self.quiet_grace_s is not None:
            return self._demand_timer(view)
        downs, ups, extra = [], [], []
        busy = (view.state == ON) & (view.idle_for < 0)
        for gi, (warm, grace) in enumerate(self._shift(view, self._targets(view), busy)):
            mask = self._group == gi
            on = int((mask & (view.state == ON)).sum())
            n_busy = int((mask & busy).sum())
            head, self._pid[gi] = pid_headroom(self.gains, self._pid[gi], self.target_util, n_busy, on,
                                               self.interval_s)
            head = head if self.use_pid else 0
            extra.append(head)
            idle, idle_for = _idle_for_positions(view, mask)
            off = np.flatnonzero(mask & (view.state == OFF))
            floor = (self.plan.nodes_on(self.machine.groups[gi].name, view.now) or 0) if self.plan else 0
            step = group_power(n_busy, idle_for, int((mask & (view.state == BOOTING)).sum()), len(off),
                               warm + head, grace, floor)
            downs.append(idle[list(step.down)])
            ups.append(off[: step.up])
        self.headroom.append(extra)
        return np.concatenate(downs).astype(np.int64), np.concatenate(ups).astype(np.int64)


@dataclass
class PidPower:
    """The PID controller alone, per node group, both ways: each period it moves the group's powered nodes (on +
    booting) toward ``busy / target_util``. The error is the utilization error ``target - busy/powered`` expressed
    in nodes (``busy/target - powered``, i.e. scaled by ``powered/target``), so the plant is the integrating one
    "powered += output" the gains were tuned on, here with real boot times, jobs that boot nodes themselves and
    nodes that go down only when idle. ``deadband`` (nodes) is the hysteresis. ``trace`` records per period and
    group (powered, busy) for the step and diurnal figures."""

    machine: Machine
    target_util: float = 0.75
    gains: PidGains = DEFAULT_GAINS
    deadband: float = 0.5
    min_on: int = 0
    interval_s: float = 60.0
    name: str = "pid"
    trace: list[tuple[float, list[int], list[int]]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        counts = [g.count for g in self.machine.groups]
        self._gains = replace(self.gains, deadband=self.deadband)
        self._group = np.repeat(np.arange(len(counts)), counts)
        self._pid = [PidState() for _ in counts]

    def decide(self, view: PowerView) -> tuple[np.ndarray, np.ndarray]:
        downs, ups, powered_now, busy_now = [], [], [], []
        for gi in range(len(self.machine.groups)):
            mask = self._group == gi
            busy = int((mask & (view.state == ON) & (view.idle_for < 0)).sum())
            booting = int((mask & (view.state == BOOTING)).sum())
            powered = int((mask & (view.state == ON)).sum()) + booting
            u, self._pid[gi] = pid_step(self._gains, self._pid[gi], busy / self.target_util, float(powered),
                                        self.interval_s)
            want = max(self.min_on, round(powered + u))
            idle, idle_for = _idle_for_positions(view, mask)
            off = np.flatnonzero(mask & (view.state == OFF))
            step = group_power(busy, idle_for, booting, len(off), max(want - busy, 0), 0.0, self.min_on)
            downs.append(idle[list(step.down)])
            ups.append(off[: step.up])
            powered_now.append(powered)
            busy_now.append(busy)
        self.trace.append((view.now, powered_now, busy_now))
        return np.concatenate(downs).astype(np.int64), np.concatenate(ups).astype(np.int64)
