"""The hourly capacity-plan instance: what the optimizer decides over, built from a site and a workload.

Contract. Over ``H`` hours from ``start`` (UTC, hour-aligned), node group ``g`` has ``x[g,t]`` of its
``count[g]`` nodes on; work of class ``c`` (node-hours at speed 1, the site's ``speed`` table) arrives as
``demand[c,t]`` and is served on group ``g`` at ``speed[c,g]`` per node-hour (0: it cannot run there). Work is a
fluid at hourly steps (a job may be spread over hours and groups), and powering a node on or off is free and
instant: the plan is a capacity plan, not a schedule. Every arrival must be served within the horizon.

Cost (the site's currency): a node that is on pays its group's ``cost_per_hour`` (the site's price of a node
hour, what Slurm's node Weight and the billing weights carry; for ``burst`` groups the provider's price) plus
``(idle_w - off_w)`` at its region's time-of-use electricity price (``Cluster.tariff``); a busy node-hour adds
``busy_w - idle_w``; work still waiting past its QoS tier's ``max_wait`` costs the tier's ``sla_penalty`` per
node-hour and hour. What does not depend on the plan (off_w of every node) is ``fixed_cost``. Performance: ``job_hours`` = node-hours of work waiting (summed per hour) + node-hours running,
lower is better; ``performance = ideal / job_hours`` where ideal is every job served on arrival on its fastest
group.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..site import NodeGroup, Site
    from ..workload.jobs import JobTable

HOUR = 3600.0
_HORIZON = re.compile(r"^(\d+)([hd])$")


def parse_horizon(text: str) -> int:
    """``7d`` / ``36h`` -> hours (1 .. 31 days)."""
    m = _HORIZON.match(text.strip())
    if not m:
        raise ValueError(f"horizon '{text}' is not Nd or Nh (e.g. 7d, 36h)")
    hours = int(m.group(1)) * (24 if m.group(2) == "d" else 1)
    if not 1 <= hours <= 31 * 24:
        raise ValueError(f"horizon '{text}' must be 1 hour .. 31 days")
    return hours


@dataclass(frozen=True)
class PlanInstance:
    groups: tuple[str, ...]
    count: np.ndarray  # (G,) nodes per group
    burst: np.ndarray  # (G,) bool
    classes: tuple[str, ...]
    speed: np.ndarray  # (C, G)
    demand: np.ndarray  # (C, H) node-hours at speed 1 arriving in hour t
    max_wait_h: np.ndarray  # (C,) int hours; H means no deadline but the horizon's end
    late_share: np.ndarray  # (C,) at most this share of the class's work may be late by one hour (1 - target_pct)
    penalty: np.ndarray  # (C,) SLA penalty per node-hour late per hour
    on_cost: np.ndarray  # (G, H) cost of one node on for hour t
    busy_cost: np.ndarray  # (G, H) extra cost of one busy node-hour
    fixed_cost: float = 0.0
    start: float = 0.0  # epoch s of hour 0
    currency: str = "EUR"
    name: str = ""

    @property
    def hours(self) -> int:
        return self.demand.shape[1]

    def ideal_job_hours(self) -> float:
        """Every arrival served at once on its fastest group (the bound ``performance`` is measured against)."""
        best = self.speed.max(axis=1)
        return float((self.demand.sum(axis=1) / best).sum())

    def scaled(self, factor: float) -> PlanInstance:
        """The same instance with demand times ``factor``."""
        return _replace(self, demand=self.demand * factor)

    def summary(self) -> dict:
        return {"name": self.name, "hours": self.hours, "groups": len(self.groups), "classes": len(self.classes),
                "nodes": int(self.count.sum()), "demand_node_hours": round(float(self.demand.sum()), 3),
                "start": dt.datetime.fromtimestamp(self.start, dt.timezone.utc).isoformat()}


def _replace(inst: PlanInstance, **changes) -> PlanInstance:
    import dataclasses

    return dataclasses.replace(inst, **changes)


def price_table(site: Site, start: float, hours: int) -> tuple[dict[str, np.ndarray], str]:
    """Per node group: the electricity price (per kWh) of each hour, from its cluster's tariff in the group's
    own time zone; and the currency (one per site: tariffs in two currencies are refused)."""
    from ..scale.calendar import is_active
    from ..site.schema import Calendar, Window

    currencies = {c.tariff.currency for c in site.clusters if c.tariff}
    if len(currencies) > 1:
        raise ValueError(f"cluster tariffs are in {sorted(currencies)}: one currency per site")
    times = [dt.datetime.fromtimestamp(start + h * HOUR, dt.timezone.utc) for h in range(hours)]
    out = {}
    for cluster in site.clusters:
        for g in cluster.node_groups:
            tariff = cluster.tariff
            if tariff is None:
                out[g.name] = np.zeros(hours)
                continue
            cals = [Calendar(name="tou", windows=(Window(days=w.days, start=w.start, end=w.end),))
                    for w in tariff.windows]
            prices = np.full(hours, tariff.price_kwh)
            for h, when in enumerate(times):
                for cal, w in zip(cals, tariff.windows):
                    if is_active(cal, when, g.timezone or cluster.timezone):
                        prices[h] = w.price_kwh
                        break
            out[g.name] = prices
    return out, (currencies.pop() if currencies else "EUR")


def _wait_hours(text: str | None, horizon: int) -> int:
    if not text:
        return horizon
    from ..workload.sacct import parse_timelimit

    secs = parse_timelimit(text)
    return horizon if secs is None else min(horizon, int(secs // HOUR))


def demand_table(jobs: JobTable, classes: tuple[str, ...], default: str, start: float, hours: int,
                 node_size: np.ndarray | None = None) -> np.ndarray:
    """(C, H) node-hours by class and hour: a job of ``n`` nodes running ``r`` asks ``n`` nodes per hour from its
    submit time for ``r`` (a rate, so a tier's max_wait bounds when its work starts being served, not when it
    ends), each node counted as the share of its class's typical node it asks (``node_size[c]`` = (cpus,
    accelerators) per node; the larger share, at most 1); what falls outside the horizon is left out; a class the site does not name counts as ``default``."""
    names = jobs.class_names or ()
    index = {c: i for i, c in enumerate(classes)}
    job_class = np.array([index.get(names[k] if 0 <= k < len(names) else default, index[default])
                          for k in jobs.wclass], dtype=int) if len(jobs) else np.zeros(0, int)
    s = (np.asarray(jobs.submit, float) - start) / HOUR
    e = s + np.asarray(jobs.run, float) / HOUR
    n = np.asarray(jobs.nodes, float)
    if node_size is not None and len(jobs):
        cpn, apn = node_size[job_class, 0], node_size[job_class, 1]
        share = np.maximum(np.asarray(jobs.cores, float) / cpn,
                           np.where(apn > 0, np.asarray(jobs.gres_count, float) / np.maximum(apn, 1), 0.0))
        n = n * np.clip(share, 0.0, 1.0)
    grid = np.arange(hours + 1, dtype=float)
    out = np.zeros((len(classes), hours))
    for c in range(len(classes)):
        mask = (job_class == c) & (e > 0) & (s < hours)
        if not mask.any():
            continue
        cum = (n[mask, None] * np.clip(grid[None, :] - s[mask, None], 0, (e - s)[mask, None])).sum(axis=0)
        out[c] = np.diff(cum)
    return out


def build_instance(site: Site, jobs: JobTable, hours: int, start: float | None = None, name: str = ""
                   ) -> PlanInstance:
    """The instance of ``site`` over ``hours`` from ``start`` (default: the first submit's hour)."""
    from ..pack.classes import speed_table

    groups = site.node_groups
    classes = tuple(wc.name for wc in site.policy.workload_classes) or ("batch",)
    default = site.policy.default_class or classes[-1]
    if default not in classes:
        classes = (*classes, default)
    if start is None:
        start = float(np.floor(jobs.submit.min() / HOUR) * HOUR) if len(jobs) else 0.0
    speed = np.ones((len(classes), len(groups)))
    for j, g in enumerate(groups):
        table = dict(speed_table(site, g))
        for i, c in enumerate(classes):
            speed[i, j] = table.get(c, 1.0)
    tiers = {q.name: q for q in site.policy.qos_tiers}
    wcs = {wc.name: wc for wc in site.policy.workload_classes}
    tier = [tiers.get(wcs[c].qos or "") if c in wcs else None for c in classes]
    prices, currency = price_table(site, start, hours)
    on_cost, busy_cost, fixed = _costs(groups, prices)
    return PlanInstance(
        groups=tuple(g.name for g in groups), count=np.array([g.count for g in groups]),
        burst=np.array([g.burst for g in groups]), classes=classes, speed=speed,
        demand=demand_table(jobs, classes, default, start, hours, _node_size(groups, speed)),
        max_wait_h=np.array([_wait_hours(t.max_wait if t else None, hours) for t in tier]),
        late_share=np.array([(1 - t.target_pct / 100) if t else 1.0 for t in tier]),
        penalty=np.array([t.sla_penalty if t else 0.0 for t in tier]),
        on_cost=on_cost, busy_cost=busy_cost, fixed_cost=fixed, start=start, currency=currency, name=name)


def _node_size(groups: tuple[NodeGroup, ...], speed: np.ndarray) -> np.ndarray:
    """(C, 2): mean cpus and accelerators per node over the groups each class can run on."""
    from ..pack.classes import per_node

    sizes = np.array([[per_node(g).cpus, per_node(g).accels] for g in groups], dtype=float)
    out = np.ones((speed.shape[0], 2))
    for c in range(speed.shape[0]):
        ok = speed[c] > 0
        if ok.any():
            out[c] = sizes[ok].mean(axis=0)
    out[:, 0] = np.maximum(out[:, 0], 1.0)
    return out


def _costs(groups: tuple[NodeGroup, ...], prices: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, float]:
    on, busy, fixed = [], [], 0.0
    for g in groups:
        p = prices[g.name]
        on.append((g.power.idle_w - g.power.off_w) / 1000 * p + g.cost_per_hour)
        busy.append((g.power.busy_w - g.power.idle_w) / 1000 * p)
        fixed += float(g.power.off_w / 1000 * p.sum() * g.count)
    return np.array(on), np.array(busy), fixed
