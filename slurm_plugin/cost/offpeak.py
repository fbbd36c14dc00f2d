"""Off-peak planning as switchable policies, measured in the simulator on a multi-region diurnal workload
(issue 18 item 4), on a site with regions in several time zones (``site_configs/large.yaml``).

Workload (:func:`generate`): each job has a home region (in proportion to the region's CPU cores) and arrives
mostly in its region's working hours (weekdays 09:00-18:00 local: weight 1; other weekday hours 0.15; weekends
0.1). Kinds: ``batch`` (CPU, one arch), ``render`` (CPU, x86_64 or aarch64), ``dev`` (short x86 jobs on the
dev partition) and ``gpu`` (typed GPU/NPU jobs of the home region, never moved); log-normal run times, scaled
by one factor (at most 4x) so the CPU kinds offer ``load`` of the CPU groups' cores over the days.

Where each kind may run (:class:`OffPeak`, applied at arrival and re-applied to pending jobs every 300 s, as
the calendar reshapes of :mod:`slurm_plugin.scale.reshape` move nodes between partitions):

* baseline: batch and render on their home region's CPU groups, dev on a dev slice of the dev partition's group
  (a quarter of its nodes: an assumption), gpu on its home region's accelerators;
* ``follow-the-sun``: batch and render also on the CPU groups of regions where the site's ``nights`` or
  ``weekends`` calendar is active (their local time);
* ``dev-shrink``: while ``workdays`` is active (dev group's time zone), dev keeps ``keep_fraction`` of its slice
  (the site's dev reshape rule, 0.2 in large.yaml) and production batch/render work may use the rest;
* ``weekend-lending``: render jobs may also use the accelerator nodes (their cores) of regions in ``weekends``.

Every arm runs FCFS + EASY with the break-even power planner, so consolidation shows in energy, cost and the
utilization of powered cores; utilization of all cores is reported too.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from dataclasses import dataclass, replace

import numpy as np

from ..site import Site
from ..workload.jobs import ARCH_BIT, JobTable, Workload
from ..workload.limits import parse_generator_spec

POLICIES = ("follow-the-sun", "dev-shrink", "weekend-lending")
KINDS = ("batch", "render", "dev", "gpu")
EPOCH = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)  # simulated time 0: a Monday, 00:00 UTC
DEV_SLICE = 0.25  # share of the dev partition's group set aside for dev/test (assumption)
SPEC_BOUNDS = {"jobs": (0, 1_000_000), "seed": (0, 2**32 - 1), "days": (1, 60), "load": (1e-3, 10.0)}


@dataclass(frozen=True)
class MultiRegionSpec:
    jobs: int = 0  # 0: as many as ``load`` needs with the base run times
    seed: int = 1
    days: int = 7
    load: float = 0.6

    @classmethod
    def parse(cls, text: str) -> MultiRegionSpec:
        """``multiregion:jobs=0,seed=1,days=7,load=0.6`` (every key optional; jobs=0: as many as the load needs)."""
        return parse_generator_spec(cls, "multiregion", text, SPEC_BOUNDS)


def _local_weight(t: np.ndarray, tz: str) -> np.ndarray:
    """Arrival weight at simulated times ``t`` in time zone ``tz``."""
    import zoneinfo
    off = EPOCH.astimezone(zoneinfo.ZoneInfo(tz)).utcoffset().total_seconds()
    local = t + off
    hour = (local % 86400) / 3600
    weekend = ((local // 86400) % 7) >= 5  # EPOCH is a Monday
    work = (hour >= 9) & (hour < 18)
    return np.where(weekend, 0.1, np.where(work, 1.0, 0.15))


def dev_group(site: Site) -> tuple[str, float]:
    """(the dev partition's node group, the workday keep fraction of its reshape rule)."""
    rule = next((r for r in site.policy.reshapes if r.keep_fraction is not None), None)
    if rule is None:
        raise ValueError(f"site {site.name} has no reshape rule with keep_fraction (a dev partition to shrink)")
    part = next(p for p in site.partitions if p.name == rule.partition)
    return part.node_groups[0], rule.keep_fraction


def machine(site: Site):
    """The site's machine with the dev group split into ``<g>-dev-keep``, ``<g>-dev-flex`` (the dev slice) and
    ``<g>`` (the rest), so dev-shrink can move whole groups."""
    from ..sim.machine import Machine, machine_from_site
    base = machine_from_site(site)
    name, keep = dev_group(site)
    groups = []
    for g in base.groups:
        if g.name != name:
            groups.append(g)
            continue
        dev = max(2, round(g.count * DEV_SLICE))
        kept = max(1, math.ceil(dev * keep))
        groups += [replace(g, name=f"{name}-dev-keep", count=kept), replace(g, name=f"{name}-dev-flex", count=dev - kept),
                   replace(g, count=g.count - dev)]
    return Machine(base.name, tuple(groups))


def _site_group(site: Site, name: str):
    return site.group(name.split("-dev-")[0])


def generate(site: Site, spec: MultiRegionSpec) -> tuple[Workload, np.ndarray, np.ndarray]:
    """(workload, home region index per job, kind index per job) for :data:`KINDS`; regions in site order."""
    rng = np.random.default_rng(spec.seed)
    regions = list(dict.fromkeys(g.region for g in site.node_groups))
    tz = {g.region: g.timezone for g in site.node_groups}
    cpu = np.array([sum(g.count * g.cpu.cores for g in site.node_groups if g.region == r and not g.gres)
                    for r in regions], dtype=float)
    horizon = spec.days * 86400.0
    core_s = spec.load * cpu.sum() * horizon
    if spec.jobs:
        n = spec.jobs
    else:  # the expected core-seconds of a job, from a pilot draw of the same distributions
        kind, run, cores = _draw(np.random.default_rng(spec.seed + 1), 100_000)
        n = max(1, math.ceil(core_s / float((run * cores * (kind != 3)).mean())))
    home = rng.choice(len(regions), n, p=cpu / cpu.sum())
    submit = np.empty(n)
    for r, name in enumerate(regions):
        rows = np.flatnonzero(home == r)
        got: list[np.ndarray] = []
        while sum(len(x) for x in got) < len(rows):
            t = rng.uniform(0, horizon, 4 * len(rows) + 16)
            got.append(t[rng.random(len(t)) < _local_weight(t, tz[name])])
        submit[rows] = np.concatenate(got)[:len(rows)]
    kind, run, cores = _draw(rng, n)
    mask = np.where(rng.random(n) < 0.5, ARCH_BIT["x86_64"], ARCH_BIT["aarch64"])
    mask = np.where(kind == 1, ARCH_BIT["x86_64"] | ARCH_BIT["aarch64"], mask)
    mask = np.where(kind == 2, ARCH_BIT["x86_64"], mask)
    gname, gtype, gcount = np.full(n, -1), np.full(n, -1), np.zeros(n, dtype=np.int64)
    names, types = [], []
    for i in np.flatnonzero(kind == 3):
        accel = [(nm, t, c) for g in site.node_groups if g.region == regions[home[i]] for nm, t, c in g.gres
                 if nm in ("gpu", "npu")]
        nm, t, c = accel[rng.integers(len(accel))]
        names += [nm] * (nm not in names)
        types += [t] * (t not in types)
        gname[i], gtype[i], gcount[i] = names.index(nm), types.index(t), rng.integers(1, c + 1)
        cores[i], mask[i] = 4 * gcount[i], 0
    run[kind != 3] = _calibrated(run[kind != 3], cores[kind != 3], core_s)
    limit = np.ceil(run * 1.5 / 300.0) * 300.0
    jobs = JobTable.build(dict(id=np.arange(1, n + 1), submit=submit.round(), run=run, limit=limit, nodes=np.ones(n),
                               cores=cores, mem_gb=cores * 1.0, gres_name=gname, gres_type=gtype, gres_count=gcount,
                               arch_mask=mask, user=home, wclass=kind),
                          gres_names=tuple(names), gres_types=tuple(types), class_names=KINDS)
    idx = np.lexsort((np.arange(n), submit.round()))  # JobTable.build's (submit, id) order: carry home/kind along
    return Workload(name=f"multiregion-{site.name}-{n}-seed{spec.seed}", jobs=jobs), home[idx], kind[idx]


def _draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kind index, base run time s, cores) of ``n`` jobs: log-normal run times around 30 min (dev: a third, at
    most an hour), 1-32 cores."""
    kind = rng.choice(len(KINDS), n, p=[0.45, 0.25, 0.2, 0.1])
    run = np.minimum(np.exp(rng.normal(np.log(1800.0), 1.1, n)), 86400.0).round() + 60
    run[kind == 2] = np.minimum(run[kind == 2], 3 * 3600.0) / 3
    return kind, run, 2 ** rng.integers(0, 6, n)  # 1..32 cores


MAX_RUN_S = 86400.0  # the longest job (a site's usual MaxTime of a day)
MAX_STRETCH = 4.0  # run times at most this times the base distribution (median 30 min -> 2 h)


def _calibrated(run: np.ndarray, cores: np.ndarray, core_s: float) -> np.ndarray:
    """``run`` scaled by one factor (at most :data:`MAX_STRETCH`) so the jobs offer ``core_s`` core-seconds, each
    run time kept in [60 s, :data:`MAX_RUN_S`]. Stretching further would make a few jobs days long and let them
    set the makespan (the utilization over it would then say nothing): raises ValueError naming the number of
    jobs that load needs instead."""
    def offered(f: float) -> float:
        return float((np.clip(run * f, 60.0, MAX_RUN_S) * cores).sum())

    if offered(MAX_STRETCH) < core_s:
        need = math.ceil(len(run) * core_s / offered(MAX_STRETCH) / 0.9)  # (CPU kinds are 90 % of the jobs)
        raise ValueError(f"{len(run)} CPU jobs cannot offer the load asked without run times over {MAX_STRETCH:g}x "
                         f"the base distribution: give jobs >= {need} (or jobs=0: as many as the load needs), "
                         "or a lower load, fewer days or nodes")
    lo, hi = 0.0, MAX_STRETCH
    for _ in range(60):  # bisection on the factor: offered() is monotone in it
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if offered(mid) < core_s else (lo, mid)
    return np.clip(run * hi, 60.0, MAX_RUN_S).round()


class OffPeak:
    """The switchable off-peak policies as one router + periodic step (``route`` at arrival, ``decide`` every
    ``interval_s``): each job's node groups are what its kind may use now under the active ``policies``."""

    name = "offpeak"

    def __init__(self, site: Site, machine, jobs: JobTable, home: np.ndarray, kind: np.ndarray,
                 policies: tuple[str, ...] = (), interval_s: float = 300.0):
        bad = [p for p in policies if p not in POLICIES]
        if bad:
            raise ValueError(f"unknown off-peak policy '{bad[0]}' (valid: {', '.join(POLICIES)})")
        from ..scale.calendar import is_active
        self._is_active = is_active
        self.site, self.machine, self.jobs, self.home, self.kind = site, machine, jobs, home, kind
        self.policies, self.interval_s = frozenset(policies), interval_s
        self.regions = list(dict.fromkeys(g.region for g in site.node_groups))
        self._calendars = {c.name: c for c in site.policy.calendars}
        gs = [_site_group(site, g.name) for g in machine.groups]
        self._region = np.array([self.regions.index(g.region) for g in gs])
        self._tz = [g.timezone or "UTC" for g in gs]
        self._accel = np.array([bool(g.gres) for g in machine.groups])
        self._dev = np.array(["-dev-" in g.name for g in machine.groups])
        self._dev_keep = np.array([g.name.endswith("-dev-keep") for g in machine.groups])
        self._dev_flex = np.array([g.name.endswith("-dev-flex") for g in machine.groups])
        self._clock: tuple = (None, None)
        self._narrowed: dict = {}
        self.stats = {"moved": 0}

    def _active(self, cal: str, t: float) -> np.ndarray:
        """Per group: is calendar ``cal`` active at simulated time ``t`` in the group's time zone."""
        when = EPOCH + dt.timedelta(seconds=float(t))
        return np.array([self._is_active(self._calendars[cal], when, tz) for tz in self._tz])

    def _now(self, t: float) -> dict:
        bucket = int(t // 300)
        if self._clock[0] != bucket:
            self._clock = (bucket, {c: self._active(c, t) for c in ("nights", "weekends", "workdays")})
        return self._clock[1]

    def allowed(self, j: int, t: float) -> np.ndarray:
        """Bool per group: where job row ``j`` may run at ``t``."""
        cal, k = self._now(t), KINDS[self.kind[j]]
        home = self._region == self.home[j]
        cpu = ~self._accel & ~self._dev
        if k == "dev":
            shrink = "dev-shrink" in self.policies and cal["workdays"][self._dev_keep].any()
            return self._dev_keep | (self._dev_flex & (not shrink))
        if k == "gpu":
            return home & self._accel
        ok = cpu & home
        if "follow-the-sun" in self.policies:
            ok |= cpu & (cal["nights"] | cal["weekends"])
        if "dev-shrink" in self.policies and cal["workdays"][self._dev_keep].any():
            ok |= self._dev_flex
        if k == "render" and "weekend-lending" in self.policies:
            ok |= self._accel & cal["weekends"]
        return ok

    def _narrow(self, req, ok: np.ndarray):
        from ..sim.cluster import Req
        key = (req, ok.tobytes())
        if key not in self._narrowed:
            opts = tuple(o for o in req.options if ok[o[0]])
            whole = all(req.cores >= self.machine.groups[g].cores for g, _ in opts)
            self._narrowed[key] = Req(req.nodes, req.cores, req.mem, req.gcount, opts, whole) if opts else None
        return self._narrowed[key]

    def route(self, j: int, now: float, cluster, req):
        return self._narrow(cluster.req(self.jobs, j), self.allowed(j, now))

    def decide(self, view) -> dict:
        out = {}
        c = view.cluster
        for j in view.pending.tolist():
            r = self._narrow(c.req(self.jobs, j), self.allowed(j, view.now))
            if r is not None and r != view.current(j):
                out[j] = r
        self.stats["moved"] += len(out)
        return out


ARMS = {"baseline": (), "follow-the-sun": ("follow-the-sun",), "dev-shrink": ("dev-shrink",),
        "weekend-lending": ("weekend-lending",), "all": POLICIES}


def run_offpeak(site: Site, spec: MultiRegionSpec, arm: str) -> dict:
    """One arm on the generated workload: a row of the issue's format plus per-group utilization."""
    if arm not in ARMS:
        raise ValueError(f"unknown off-peak arm '{arm}' (valid: {', '.join(ARMS)})")
    from ..policy import ScalingSpec
    from ..sim.hooks import ranking
    from ..sim.metrics import compute_metrics
    from ..sim.policy import sim_scaling
    from .compare_engine import CostEngine

    m = machine(site)
    w, home, kind = generate(site, spec)
    cpu0 = time.process_time()
    pol = OffPeak(site, m, w.jobs, home, kind, ARMS[arm])
    engine = CostEngine(m, w.jobs, ranking("fcfs", site, float(m.cores)), backfill=True,
                        scaling=sim_scaling(ScalingSpec(), m, w.jobs), packing=pol, admission=pol)
    out = engine.run()
    met = compute_metrics(w.jobs, out, m)
    on, busy = engine.meter.on_core_s, out.group_core_s
    return {"scenario": arm, "policy": ",".join(ARMS[arm]) or "none", "utilization": met["utilization"],
            "utilization_powered": float(busy.sum() / max(on.sum(), 1e-9)), "avg_wait_s": met["avg_wait_s"],
            "p95_wait_s": met["p95_wait_s"], "energy_kwh": float(met["energy_kwh"]), "cost": float(met["cost"]),
            "utilization_by_group": met["utilization_by_group"],
            "utilization_powered_by_group": {g.name: float(busy[i] / on[i]) if on[i] > 0 else None
                                             for i, g in enumerate(m.groups)},
            "jobs": len(w.jobs), "unstarted": int(np.isnan(out.begin).sum()), "moves": pol.stats["moved"],
            "cpu_s": time.process_time() - cpu0}


def _one(shared, arm: str) -> dict:
    site, spec = shared
    return run_offpeak(site, spec, arm)


def compare_offpeak(site: Site, spec: MultiRegionSpec, arms: tuple[str, ...] = tuple(ARMS), jobs: int = 1,
                    on_row=None) -> list[dict]:
    """Every arm on the same generated workload (on ``jobs`` processes), rows in the order of ``arms``."""
    from ..sim.parallel import run_all
    return run_all(_one, (site, spec), list(arms), jobs, desc="offpeak",
                   on_result=(lambda i, row: on_row(row)) if on_row else None)


def effects(rows: list[dict]) -> list[dict]:
    """Each arm against ``baseline``: utilization (all cores, powered) in points, wait and cost change."""
    base = next((r for r in rows if r["scenario"] == "baseline"), None)
    if base is None:
        return []
    out = []
    for r in rows:
        if r is base:
            continue
        out.append({"scenario": r["scenario"],
                    "utilization_points": 100 * (r["utilization"] - base["utilization"]),
                    "utilization_powered_points": 100 * (r["utilization_powered"] - base["utilization_powered"]),
                    "wait_change": r["avg_wait_s"] / base["avg_wait_s"] - 1 if base["avg_wait_s"] else None,
                    "cost_change": r["cost"] / base["cost"] - 1 if base["cost"] else None,
                    "energy_change": r["energy_kwh"] / base["energy_kwh"] - 1 if base["energy_kwh"] else None})
    return out
