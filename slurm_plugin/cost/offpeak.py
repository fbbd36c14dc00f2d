"""Off-peak planning as switchable policies, measured in the simulator on a multi-region diurnal workload
(issue 18 item 4), on a site with regions in several time zones (``site_configs/large.yaml``).

Workload (:func:`generate`): each job has a home region and arrives mostly in its region's working hours
(weekdays 09:00-18:00 local: weight 1; other weekday hours 0.15; weekends 0.1). Kinds: ``batch`` (CPU, one
arch), ``render`` (CPU, x86_64 or aarch64), ``dev`` (short x86 jobs on the dev partition) and ``gpu`` (typed
GPU/NPU jobs of the home region, never moved); log-normal run times. The load is calibrated per pool
(:func:`pools`: the groups a stream of jobs runs on in the baseline arm): each pool's jobs offer ``load`` of its
cores (devices for an accelerator pool) over the days, so a 1-node accelerator or dev pool is not overloaded
while the CPU groups sit at the load asked. Groups no kind runs on (riscv64 CPUs, DPU nodes) get no jobs.

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

from ..errors import PicklableError
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


@dataclass(frozen=True)
class LoadPool:
    """The node groups (of :func:`machine`) one stream of jobs runs on in the baseline arm, and what it carries.

    CPU pools (one per region: its x86_64 and aarch64 CPU groups outside the dev slice) carry ``batch`` and
    ``render`` jobs homed in the region; the dev pool (the dev slice) carries ``dev`` jobs from every region; an
    accelerator pool (per region and GPU/NPU type) carries that type's ``gpu`` jobs homed in the region.
    ``capacity`` is in ``unit``s: cores, or devices for an accelerator pool (each job's work is run time x
    cores, or x devices)."""

    name: str
    kinds: tuple[str, ...]
    region: int | None  # the home region of its jobs (None: any, in proportion to the CPU pools)
    groups: tuple[str, ...]
    capacity: float
    unit: str  # "core" | "device"
    arches: tuple[tuple[str, float], ...] = ()  # (arch, cores) of a CPU pool: batch jobs pick one in proportion
    max_cores: int = 32  # no job asks for more cores than the pool's largest node holds (at 1 GB per core)
    gres: tuple[str, str, int] | None = None  # (name, type, per node) of an accelerator pool

    def offered(self, run: np.ndarray, cores: np.ndarray, devices: np.ndarray) -> float:
        """The work of these jobs in this pool's unit (run time x cores, or x devices)."""
        return float((run * (devices if self.unit == "device" else cores)).sum())


CPU_ARCHES = ("x86_64", "aarch64")  # what batch and render jobs are built for
KIND_MIX = {"batch": 0.45, "render": 0.25, "dev": 1.0, "gpu": 1.0}  # share of a pool's jobs by kind


def pools(site: Site) -> tuple[LoadPool, ...]:
    """Every pool of :func:`machine`'s groups in the baseline arm (see :class:`LoadPool`). A kind whose pool
    cannot carry it at all (no x86_64/aarch64 CPU nodes anywhere; a dev slice that is not x86_64; nodes that cannot
    hold the kind's smallest job) raises ValueError saying which pool and why."""
    m = machine(site)
    regions = list(dict.fromkeys(g.region for g in site.node_groups))
    region = {g.name: regions.index(_site_group(site, g.name).region) for g in m.groups}
    fits = lambda g: min(g.cores, int(g.memory_gb))  # noqa: E731  (1 GB per core)
    out = []
    for r, rname in enumerate(regions):
        cpu = [g for g in m.groups if region[g.name] == r and not g.gres and "-dev-" not in g.name
               and g.arch in CPU_ARCHES and fits(g) >= 1]
        if cpu:
            arches = tuple((a, float(sum(g.count * g.cores for g in cpu if g.arch == a))) for a in CPU_ARCHES)
            out.append(LoadPool(f"{rname} cpu", ("batch", "render"), r, tuple(g.name for g in cpu),
                                sum(c for _, c in arches), "core", tuple(a for a in arches if a[1] > 0),
                                min(32, max(fits(g) for g in cpu))))
        types = dict.fromkeys((n, t) for g in m.groups if region[g.name] == r for n, t in g.gres
                              if n in ("gpu", "npu"))
        for n, t in types:
            accel = [g for g in m.groups if region[g.name] == r and (n, t) in g.gres]
            per = min(g.gres[(n, t)] for g in accel)
            if min(fits(g) for g in accel) < 1:
                raise ValueError(f"pool {rname} {n}:{t} ({', '.join(g.name for g in accel)}) cannot carry gpu jobs: "
                                 "its nodes hold less than 1 core at 1 GB per core")
            out.append(LoadPool(f"{rname} {n}:{t}", ("gpu",), r, tuple(g.name for g in accel),
                                float(sum(g.count * g.gres[(n, t)] for g in accel)), "device",
                                max_cores=min(fits(g) for g in accel), gres=(n, t, per)))
    if not any(p.kinds == ("batch", "render") for p in out):
        raise ValueError(f"site {site.name} has no {' or '.join(CPU_ARCHES)} CPU nodes outside the dev slice: "
                         "batch and render jobs cannot run anywhere")
    dev = [g for g in m.groups if "-dev-" in g.name]
    if dev[0].arch != "x86_64" or fits(dev[0]) < 1:
        raise ValueError(f"pool dev ({', '.join(g.name for g in dev)}: {dev[0].arch}, {dev[0].cores} cores, "
                         f"{dev[0].memory_gb:g} GB) cannot carry dev jobs: they are x86_64 jobs of 1-32 cores at "
                         "1 GB per core")
    out.append(LoadPool("dev", ("dev",), None, tuple(g.name for g in dev),
                        float(sum(g.count * g.cores for g in dev)), "core", (("x86_64", 1.0),), min(32, fits(dev[0]))))
    return tuple(out)


def generate(site: Site, spec: MultiRegionSpec) -> tuple[Workload, np.ndarray, np.ndarray]:
    """(workload, home region index per job, kind index per job) for :data:`KINDS`; regions in site order.

    Each pool (:func:`pools`) gets its own jobs, whose run times are scaled by one factor (at most
    :data:`MAX_STRETCH`) so they offer exactly ``load`` x the pool's capacity over the days: every pool sees the
    load asked, whatever its size. ``jobs=0``: as many jobs per pool as that needs with the base run times;
    else ``jobs`` split over the pools in that proportion (at least one each)."""
    rng = np.random.default_rng(spec.seed)
    regions = list(dict.fromkeys(g.region for g in site.node_groups))
    tz = {g.region: g.timezone for g in site.node_groups}
    horizon = spec.days * 86400.0
    ps = pools(site)
    pilot = np.random.default_rng(spec.seed + 1)
    need = np.array([math.ceil(spec.load * p.capacity * horizon / p.offered(*_draw(pilot, p, 100_000)[1:4]) * 100_000)
                     for p in ps], dtype=float)
    counts = need.astype(int) if not spec.jobs else np.maximum(1, np.floor(spec.jobs * need / need.sum())).astype(int)
    cpu_share = np.array([sum(p.capacity for p in ps if p.region == r and p.unit == "core")
                          for r in range(len(regions))])  # dev jobs' homes: in proportion to the CPU pools
    parts = []
    for p, n in zip(ps, counts):
        kind, run, cores, devices, mask = _draw(rng, p, int(n))
        try:
            run = _calibrated(p, run, cores, devices, spec.load * p.capacity * horizon)
        except TooFewJobs as err:
            raise ValueError(f"{err}: give jobs >= {math.ceil(spec.jobs * err.need / err.jobs)} (or jobs=0: as "
                             "many as the load needs), or a lower load, fewer days or nodes") from None
        home = (np.full(n, p.region) if p.region is not None
                else rng.choice(len(regions), n, p=cpu_share / cpu_share.sum()))
        parts.append((p, kind, run, cores, devices, mask, home))
    home = np.concatenate([x[6] for x in parts])
    kind = np.concatenate([x[1] for x in parts])
    n = len(home)
    submit = np.empty(n)
    for r, name in enumerate(regions):
        rows = np.flatnonzero(home == r)
        got: list[np.ndarray] = []
        while sum(len(x) for x in got) < len(rows):
            t = rng.uniform(0, horizon, 4 * len(rows) + 16)
            got.append(t[rng.random(len(t)) < _local_weight(t, tz[name])])
        submit[rows] = np.concatenate(got)[:len(rows)] if len(rows) else []
    accel = [p for p in ps if p.gres]
    names = list(dict.fromkeys(p.gres[0] for p in accel))
    types = list(dict.fromkeys(p.gres[1] for p in accel))
    gname = np.concatenate([np.full(len(x[1]), names.index(x[0].gres[0]) if x[0].gres else -1) for x in parts])
    gtype = np.concatenate([np.full(len(x[1]), types.index(x[0].gres[1]) if x[0].gres else -1) for x in parts])
    run, cores = np.concatenate([x[2] for x in parts]), np.concatenate([x[3] for x in parts])
    gcount, mask = np.concatenate([x[4] for x in parts]), np.concatenate([x[5] for x in parts])
    limit = np.ceil(run * 1.5 / 300.0) * 300.0
    jobs = JobTable.build(dict(id=np.arange(1, n + 1), submit=submit.round(), run=run, limit=limit, nodes=np.ones(n),
                               cores=cores, mem_gb=cores * 1.0, gres_name=gname, gres_type=gtype, gres_count=gcount,
                               arch_mask=mask, user=home, wclass=kind),
                          gres_names=tuple(names), gres_types=tuple(types), class_names=KINDS)
    idx = np.lexsort((np.arange(n), submit.round()))  # JobTable.build's (submit, id) order: carry home/kind along
    return Workload(name=f"multiregion-{site.name}-{n}-seed{spec.seed}", jobs=jobs), home[idx], kind[idx]


def _draw(rng: np.random.Generator, pool: LoadPool, n: int):
    """(kind index, base run time s, cores, devices, arch mask) of ``n`` jobs of ``pool``: log-normal run times
    around 30 min (dev: a third, at most an hour), 1-32 cores (at most the pool's node); an accelerator job asks
    1 to a node's devices of the pool's type and 4 cores per device."""
    share = np.array([KIND_MIX[k] for k in pool.kinds])
    kind = np.array([KINDS.index(k) for k in pool.kinds])[rng.choice(len(pool.kinds), n, p=share / share.sum())]
    run = np.minimum(np.exp(rng.normal(np.log(1800.0), 1.1, n)), 86400.0).round() + 60
    if pool.kinds == ("dev",):
        run = np.minimum(run, 3 * 3600.0) / 3
    cores = np.minimum(2 ** rng.integers(0, 6, n), pool.max_cores)
    devices = np.zeros(n, dtype=np.int64)
    mask = np.zeros(n, dtype=np.int64)
    if pool.gres:
        devices = rng.integers(1, pool.gres[2] + 1, n)
        cores = np.minimum(4 * devices, pool.max_cores)
    else:
        arches, weight = zip(*pool.arches)
        pick = rng.choice(len(arches), n, p=np.array(weight) / sum(weight))
        mask = np.array([ARCH_BIT[a] for a in arches])[pick]
        mask = np.where(kind == KINDS.index("render"), sum(ARCH_BIT[a] for a in CPU_ARCHES), mask)
    return kind, run, cores, devices, mask


MAX_RUN_S = 86400.0  # the longest job (a site's usual MaxTime of a day)
MAX_STRETCH = 4.0  # run times at most this times the base distribution (median 30 min -> 2 h)


class TooFewJobs(PicklableError, ValueError):
    """A pool's jobs cannot offer its load within :data:`MAX_STRETCH`: ``need`` of them would."""

    def __init__(self, pool: str, jobs: int, need: int):
        super().__init__(f"pool {pool}: {jobs} jobs cannot offer the load asked without run times over "
                         f"{MAX_STRETCH:g}x the base distribution (it needs about {need})")
        self.jobs, self.need = jobs, need


def _calibrated(pool: LoadPool, run: np.ndarray, cores: np.ndarray, devices: np.ndarray,
                work: float) -> np.ndarray:
    """``run`` scaled by one factor (at most :data:`MAX_STRETCH`) so the pool's jobs offer ``work`` (in its unit),
    each run time kept in [60 s, :data:`MAX_RUN_S`]. Stretching further would make a few jobs days long and let
    them set the makespan (the utilization over it would then say nothing): raises :class:`TooFewJobs` instead."""
    def offered(f: float) -> float:
        return pool.offered(np.clip(run * f, 60.0, MAX_RUN_S), cores, devices)

    if offered(MAX_STRETCH) < work:
        raise TooFewJobs(pool.name, len(run), math.ceil(max(len(run), 1) * work / max(offered(MAX_STRETCH), 1.0)))
    lo, hi = 0.0, MAX_STRETCH
    for _ in range(60):  # bisection on the factor: offered() is monotone in it
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if offered(mid) < work else (lo, mid)
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


def pool_of(site: Site, jobs: JobTable, home: np.ndarray, kind: np.ndarray) -> list[str]:
    """The name of each job's baseline pool (:func:`pools`), by its kind, home region and device type."""
    ps = pools(site)
    cpu = {p.region: p.name for p in ps if p.kinds == ("batch", "render")}
    accel = {(p.region, p.gres[1]): p.name for p in ps if p.gres}
    gpu, dev = KINDS.index("gpu"), KINDS.index("dev")
    return [accel[(int(h), jobs.gres_types[jobs.gres_type[j]])] if k == gpu else "dev" if k == dev else cpu[int(h)]
            for j, (h, k) in enumerate(zip(home, kind))]


def waits_by(labels: list[str], wait: np.ndarray) -> dict:
    """Per label: jobs, started, mean and p95 wait (s) of the started ones."""
    labels_a = np.array(labels)
    out = {}
    for name in dict.fromkeys(labels):
        w = wait[labels_a == name]
        done = w[~np.isnan(w)]
        out[name] = {"jobs": int(len(w)), "unstarted": int(np.isnan(w).sum()),
                     "avg_wait_s": float(done.mean()) if len(done) else None,
                     "p95_wait_s": float(np.percentile(done, 95)) if len(done) else None}
    return out


def wait_table(rows: list[dict], key: str = "wait_by_pool", label: str = "pool") -> str:
    """Markdown: one line per pool (``key``: ``wait_by_pool``, or ``wait_by_kind`` with ``label`` kind), sorted,
    with its job count, and one column per arm of ``mean / p95`` wait in seconds (``-`` where no job of the pool
    started; ``(+N unstarted)`` when some did not)."""
    names = sorted({name for r in rows for name in r.get(key, {})})
    lines = ["| " + " | ".join([f"{label} (jobs)"] + [r["scenario"] for r in rows]) + " |",
             "|" + "---|" * (len(rows) + 1)]
    for name in names:
        jobs = max(r[key][name]["jobs"] for r in rows if name in r.get(key, {}))
        cells = []
        for r in rows:
            w = r.get(key, {}).get(name)
            if w is None or w["avg_wait_s"] is None:
                cell = "-"
            else:
                cell = f"{w['avg_wait_s']:.0f} / {w['p95_wait_s']:.0f}"
            if w is not None and w["unstarted"]:
                cell += f" (+{w['unstarted']} unstarted)"
            cells.append(cell)
        lines.append(f"| {name} ({jobs}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
            "wait_by_pool": waits_by(pool_of(site, w.jobs, home, kind), out.begin - w.jobs.submit),
            "wait_by_kind": waits_by([KINDS[k] for k in kind], out.begin - w.jobs.submit),
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
