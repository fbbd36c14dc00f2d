"""Seeded synthetic heterogeneous workload for a site: its workload classes, arch/accelerator mixes, and a
diurnal + weekly arrival rate.

Each workload class of the site's policy gets an equal share of arrivals (``mix`` overrides). Accelerator
classes ask for 1..per-node count of one accelerator type the site has (typed GRES, 1-2 nodes); portable
classes may run on any of their ``archs`` (an arch constraint with several archs); others on one arch picked
in proportion to the cores of that arch. Run times are log-normal (median 20 min, capped at 24 h); time limits
are the run time x U(1, 3) rounded up to 5 minutes. Arrivals are a Poisson process thinned by
``1 + 0.6 sin(day)`` (peak 14:00) and x0.5 on weekends, scaled so the offered CPU load is ``load``.

``gpu_any`` is the share of accelerator jobs that name no type (``--gres=gpu:2``: any type of that GRES name
serves; the type-flexible jobs packing may move). Alibaba's OpenB GPU trace (``gpuspec33`` variant, Weng et al.,
ATC'23) restricts 33.8 % of its GPU pods to certain types, so ``gpu_any=0.66`` is a realistic share; the
default 0 keeps every accelerator job typed (as before this key existed). It draws from its own random stream,
so the rest of a seeded workload does not change with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..site import ARCHES, Site
from .jobs import JobTable, Workload, arch_mask
from .limits import MAX_DURATION_S, MAX_JOBS, parse_generator_spec


# Bounds of each spec key: ``jobs`` within what a workload may hold, a positive finite load and run time.
SPEC_BOUNDS = {"jobs": (1, MAX_JOBS), "seed": (0, 2**32 - 1), "load": (1e-6, 100.0),
               "median_run_s": (1.0, MAX_DURATION_S), "gpu_any": (0.0, 1.0)}


@dataclass(frozen=True)
class SyntheticSpec:
    jobs: int = 10_000
    seed: int = 1
    load: float = 0.8
    median_run_s: float = 1200.0
    gpu_any: float = 0.0

    @classmethod
    def parse(cls, text: str) -> SyntheticSpec:
        """``synthetic:jobs=100000,seed=1,load=0.8`` (every key optional)."""
        return parse_generator_spec(cls, "synthetic", text, SPEC_BOUNDS)


def _classes(site: Site) -> list[dict]:
    """Per class: allowed archs, accelerator (name, type, per-node count) options, qos priority."""
    qos = {q.name: float(q.priority) for q in site.policy.qos_tiers}
    groups = site.node_groups
    out = []
    for wc in site.policy.workload_classes or ():
        accels = sorted({(n, t, c) for g in groups for n, t, c in g.gres if t in wc.accelerators})
        archs = [a for a in wc.archs if any(g.cpu.arch == a for g in groups)]
        out.append(dict(name=wc.name, archs=archs, portable=wc.portable, accels=accels,
                        qos=qos.get(wc.qos or "", 0.0)))
    if not out:
        out.append(dict(name="batch", archs=list(ARCHES), portable=True, accels=[], qos=0.0))
    return out


def generate(site: Site, spec: SyntheticSpec) -> Workload:
    rng = np.random.default_rng(spec.seed)
    classes = _classes(site)
    n = spec.jobs
    cls_idx = rng.integers(0, len(classes), n)
    arch_cores = {a: sum(g.count * g.cpu.cores for g in site.node_groups if g.cpu.arch == a) for a in ARCHES}
    min_cores = {a: min([g.cpu.cores for g in site.node_groups if g.cpu.arch == a] or [1]) for a in ARCHES}
    run = np.minimum(np.exp(rng.normal(np.log(spec.median_run_s), 1.2, n)), 86400.0).round() + 1
    limit = np.ceil(run * rng.uniform(1.0, 3.0, n) / 300.0) * 300.0
    nodes = np.ones(n, dtype=np.int64)
    cores = np.ones(n, dtype=np.int64)
    mask = np.zeros(n, dtype=np.int64)
    gname = np.full(n, -1)
    gtype = np.full(n, -1)
    gcount = np.zeros(n, dtype=np.int64)
    gres_names: list[str] = []
    gres_types: list[str] = []
    for ci, c in enumerate(classes):
        rows = np.flatnonzero(cls_idx == ci)
        if c["accels"]:
            pick = rng.integers(0, len(c["accels"]), len(rows))
            for k, (name, typ, per_node) in enumerate(c["accels"]):
                sel = rows[pick == k]
                if name not in gres_names:
                    gres_names.append(name)
                if typ not in gres_types:
                    gres_types.append(typ)
                gname[sel], gtype[sel] = gres_names.index(name), gres_types.index(typ)
                gcount[sel] = rng.integers(1, per_node + 1, len(sel))
                holders = sum(g.count for g in site.node_groups if (name, typ, per_node) in g.gres)
                nodes[sel] = np.where(rng.random(len(sel)) < 0.2, min(2, holders), 1)
                cores[sel] = np.maximum(1, gcount[sel] * 4)
            continue
        archs = c["archs"] or list(ARCHES)
        if c["portable"]:
            mask[rows] = arch_mask(archs)
            smallest = min(min_cores[a] for a in archs)
        else:
            weights = np.array([arch_cores[a] for a in archs], dtype=float)
            chosen = rng.choice(len(archs), len(rows), p=weights / weights.sum())
            mask[rows] = [arch_mask([archs[k]]) for k in chosen]
            smallest = min(min_cores[archs[k]] for k in set(chosen.tolist())) if len(rows) else 1
        cores[rows] = np.minimum(2 ** rng.integers(0, 7, len(rows)), smallest)
        # multi-node jobs stay within the nodes of their least common allowed arch
        fewest = min(sum(g.count for g in site.node_groups if g.cpu.arch == a) for a in archs)
        nodes[rows] = np.where(rng.random(len(rows)) < 0.1,
                               np.minimum(2 ** rng.integers(1, 5, len(rows)), fewest), 1)
    if spec.gpu_any > 0:
        if spec.gpu_any > 1:
            raise ValueError(f"gpu_any is a share of accelerator jobs: 0..1 (got {spec.gpu_any:g})")
        untyped = (gtype >= 0) & (np.random.default_rng([spec.seed, 1]).random(n) < spec.gpu_any)
        gtype = np.where(untyped, -1, gtype)
    demand = run * np.where(gname >= 0, gcount, cores) * nodes
    rates = _class_rates(site, classes, cls_idx, demand, spec.load)
    # resample the class mix so each class offers ``load`` of its own resource
    counts = np.round(n * rates / rates.sum()).astype(int)
    counts[np.argmax(counts)] += n - counts.sum()
    pick = np.concatenate([rng.choice(np.flatnonzero(cls_idx == ci), k) for ci, k in enumerate(counts) if k])
    rng.shuffle(pick)
    submit = _arrivals(rng, n, float(rates.sum()))
    jobs = JobTable.build(dict(submit=submit, run=np.minimum(run, limit)[pick], limit=limit[pick],
                               nodes=nodes[pick], cores=cores[pick], mem_gb=cores[pick] * 1.0,
                               gres_name=gname[pick], gres_type=gtype[pick], gres_count=gcount[pick],
                               arch_mask=mask[pick], user=rng.integers(0, 200, n), wclass=cls_idx[pick],
                               qos_priority=[classes[k]["qos"] for k in cls_idx[pick]]),
                          gres_names=tuple(gres_names), gres_types=tuple(gres_types),
                          class_names=tuple(c["name"] for c in classes))
    flex = f"-gpuany{spec.gpu_any:g}" if spec.gpu_any else ""
    return Workload(name=f"synthetic-{site.name}-{n}-seed{spec.seed}{flex}", jobs=jobs)


def _class_rates(site: Site, classes: list[dict], cls_idx: np.ndarray, demand: np.ndarray,
                 load: float) -> np.ndarray:
    """Arrivals per second of each class so that it offers ``load`` x its share of its resource: accelerator
    classes share the accelerators they can use, CPU classes share the cores of nodes without accelerators."""
    groups = site.node_groups
    cpu_cores = sum(g.count * g.cpu.cores for g in groups if not g.gres) or sum(g.count * g.cpu.cores for g in groups)
    n_acc = sum(1 for c in classes if c["accels"]) or 1
    n_cpu = sum(1 for c in classes if not c["accels"]) or 1
    rates = np.zeros(len(classes))
    for ci, c in enumerate(classes):
        d = demand[cls_idx == ci]
        if not len(d):
            continue
        if c["accels"]:
            types = {t for _, t, _ in c["accels"]}
            cap = sum(g.count * cnt for g in groups for _, t, cnt in g.gres if t in types) / n_acc
        else:
            cap = cpu_cores / n_cpu
        rates[ci] = load * cap / float(d.mean())
    return rates


def _arrivals(rng: np.random.Generator, n: int, mean_rate: float) -> np.ndarray:
    """``n`` arrival times of a Poisson process modulated by time of day and day of week (thinning)."""
    peak = mean_rate * 1.6 / 0.81  # the modulation below averages ~0.81 of its peak factor 1.6
    out: list[np.ndarray] = []
    t0, got = 0.0, 0
    while got < n:
        m = max(1024, int((n - got) * 2.5))
        t = t0 + np.cumsum(rng.exponential(1.0 / peak, m))
        day = (t % 86400.0) / 86400.0
        weekday = (t // 86400.0) % 7
        factor = (1 + 0.6 * np.sin(2 * np.pi * (day - 8 / 24))) * np.where(weekday >= 5, 0.5, 1.0)
        kept = t[rng.random(m) < factor / 1.6]
        out.append(kept)
        got += len(kept)
        t0 = t[-1]
    return np.concatenate(out)[:n].round()
