"""The Lublin-Feitelson workload model (seeded): rigid parallel jobs on a homogeneous machine of ``nodes``
one-core nodes, with optional random perturbation of the model's parameters (for training on many workloads).

Source: U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling the characteristics
of rigid jobs", J. Parallel Distrib. Comput. 63(11), 2003; the parameters are those of the authors' reference
generator ``m_lublin99.c`` (Parallel Workloads Archive, www.cs.huji.ac.il/labs/parallel/workload/models.html),
which also generated RLScheduler's "Lublin-1" trace (``../shared/workloads/swf/lublin_256.swf``). Two job types
(batch, interactive), each with its own parameters (:data:`BATCH`, :data:`INTERACTIVE`; ``typed=1``), or the
fit of the whole sample as one type (:data:`WHOLE`, the default; Lublin-1 was made with it):

- **size**: serial (1 node) with probability ``serial``; otherwise ``x`` ~ two-stage uniform on log2 nodes
  (U(ulow, umed) with probability ``uprob``, else U(umed, uhi)); with probability ``pow2`` (cumulative with
  ``serial``, as in the C code) ``x`` is rounded to an integer (a power-of-two size); nodes = round(2^x). The
  reference fits a 128-node machine (uhi 7); here ``uhi`` = log2(nodes) and ``umed`` keeps its distance below
  it (whole sample umed = uhi - 2.5; batch umed = uhi - 2; interactive uhi - 1.5, umed = log2(nodes) - 4).
- **run time**: log(run s) ~ hyper-gamma: Gamma(a1, scale b1) with probability p, else Gamma(a2, scale b2),
  where p = pa x nodes + pb (clipped to [0, 1]): bigger jobs run longer. Redrawn above log 12 (~45 h).
- **arrivals**: per type, log(inter-arrival s) ~ Gamma(aarr x arar, scale barr) measured in "rush-hour"
  seconds, spent through 48 half-hour buckets of the day whose weights follow the Gamma(anum, scale bnum) cdf
  over hours [11, 35) moved cyclically to 0..24 (busy around midday, quiet at night); the two types' streams
  are merged. Redrawn above log 13.

No time limits exist in the model: ``limit`` = run x U(1, ``overestimate``) rounded up to a minute (1 = the run
time as a perfect estimate, RLScheduler's convention for Lublin-1). ``load`` (optional) rescales the submit
times so the offered load (sum of nodes x run / (nodes x span)) equals it. ``jitter`` j > 0 multiplies each
model parameter by its own U(1 - j, 1 + j) draw (from the seed's own stream, so j = 0 and the default draw
order give the reference model), clipped to valid ranges: one spec per seed, a family of plausible sites.

Spec string (the workload loader's ``lublin:`` scheme): ``lublin:nodes=256,jobs=10000,seed=3,jitter=0.2``
(keys: nodes, jobs, seed, jitter, load, overestimate, typed).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from .jobs import JobTable, Workload
from .limits import MAX_JOBS, MAX_NODES, parse_generator_spec


@dataclass(frozen=True)
class TypeParams:
    """One job type's model parameters (names as in ``m_lublin99.c``; Gamma(a, b): shape a, scale b)."""

    serial: float
    pow2: float
    ulow: float
    umed_below: float  # uhi - umed
    uhi_below: float  # log2(nodes) - this type's uhi
    uprob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float  # already multiplied by ARAR
    barr: float
    anum: float
    bnum: float


BATCH = TypeParams(serial=0.2927, pow2=0.6686, ulow=1.2, umed_below=2.0, uhi_below=0.0, uprob=0.875,
                   a1=6.57, b1=0.823, a2=639.1, b2=0.0156, pa=-0.003, pb=0.6986,
                   aarr=6.0415 * 1.0519, barr=0.8531, anum=6.1271, bnum=5.2740)
INTERACTIVE = TypeParams(serial=0.1541, pow2=0.625, ulow=1.0, umed_below=2.5, uhi_below=1.5, uprob=0.705,
                         a1=3.8351, b1=0.6605, a2=7.073, b2=0.6856, pa=-0.0118, pb=0.9156,
                         aarr=6.5510 * 0.9797, barr=0.6621, anum=8.9186, bnum=3.6680)
WHOLE = TypeParams(serial=0.244, pow2=0.576, ulow=0.8, umed_below=2.5, uhi_below=0.0, uprob=0.86,
                   a1=4.2, b1=0.94, a2=312.0, b2=0.03, pa=-0.0054, pb=0.78,
                   aarr=10.2303 * 1.0225, barr=0.4871, anum=8.1737, bnum=3.9631)
LOG_MAX_RUN = 12.0  # TOO_MUCH_TIME: e^12 s ~ 45 h
LOG_MAX_GAP = 13.0  # TOO_MUCH_ARRIVE_TIME: e^13 s ~ 5 days
BUCKETS, BUCKET_S, DAY_START = 48, 1800.0, 11

SPEC_BOUNDS = {"nodes": (2, MAX_NODES), "jobs": (1, MAX_JOBS), "seed": (0, 2**32 - 1), "jitter": (0.0, 0.5),
               "load": (0.0, 100.0), "overestimate": (1.0, 100.0), "typed": (0, 1)}


@dataclass(frozen=True)
class LublinSpec:
    nodes: int = 256
    jobs: int = 10_000
    seed: int = 1
    jitter: float = 0.0
    load: float = 0.0  # 0: the model's own arrival rate
    overestimate: float = 1.0
    typed: int = 0  # 0: one job type, the "whole sample" fit (:data:`WHOLE`); 1: batch + interactive

    @classmethod
    def parse(cls, text: str) -> LublinSpec:
        """``lublin:nodes=256,jobs=10000,seed=3,jitter=0.2,load=0.9,overestimate=3`` (every key optional)."""
        return parse_generator_spec(cls, "lublin", text, SPEC_BOUNDS)


def perturbed(params: TypeParams, jitter: float, rng: np.random.Generator) -> TypeParams:
    """Each parameter x U(1 - jitter, 1 + jitter), probabilities kept in [0, 1] (serial + pow2 <= 1)."""
    if jitter <= 0:
        return params
    kw = {f.name: getattr(params, f.name) * rng.uniform(1 - jitter, 1 + jitter) for f in fields(params)}
    kw["serial"] = min(kw["serial"], 0.9)
    kw["pow2"] = min(kw["pow2"], 1.0 - kw["serial"])
    kw["uprob"] = min(kw["uprob"], 1.0)
    return replace(params, **kw)


def sizes(p: TypeParams, n: int, log2_nodes: float, rng: np.random.Generator) -> np.ndarray:
    """Nodes of ``n`` jobs of type ``p`` on a machine of 2^``log2_nodes`` nodes (see the module docstring)."""
    uhi = max(log2_nodes - p.uhi_below, 1.0)
    umed = min(max(uhi - p.umed_below, p.ulow), uhi)
    ulow = min(p.ulow, umed)
    u = rng.random(n)
    first = rng.random(n) < p.uprob
    x = np.where(first, rng.uniform(ulow, umed, n), rng.uniform(umed, uhi, n))
    x = np.where(u <= p.serial + p.pow2, np.floor(x + 0.5), x)
    nodes = np.floor(np.exp2(x) + 0.5).astype(np.int64)
    nodes[u <= p.serial] = 1
    return np.clip(nodes, 1, int(round(2 ** log2_nodes)))


def runtimes(p: TypeParams, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Run seconds (>= 1) of jobs of ``nodes`` nodes: exp(hyper-gamma), redrawn above :data:`LOG_MAX_RUN`."""
    prob = np.clip(p.pa * nodes + p.pb, 0.0, 1.0)
    out = np.empty(len(nodes))
    todo = np.arange(len(nodes))
    while len(todo):
        first = rng.random(len(todo)) < prob[todo]
        g = np.where(first, rng.gamma(p.a1, p.b1, len(todo)), rng.gamma(p.a2, p.b2, len(todo)))
        ok = g <= LOG_MAX_RUN
        out[todo[ok]] = g[ok]
        todo = todo[~ok]
    return np.maximum(np.round(np.exp(out)), 1.0)


def _gamma_cdf(x: np.ndarray, shape: float, scale: float) -> np.ndarray:
    from scipy.special import gammainc
    return gammainc(shape, np.asarray(x, dtype=float) / scale)


def bucket_weights(p: TypeParams) -> np.ndarray:
    """The 48 half-hour buckets' arrival weights (mean 1), bucket 0 = 00:00-00:30 (``arrive_init``)."""
    w = np.zeros(BUCKETS)
    for i in range(DAY_START, BUCKETS + DAY_START):
        w[(i - 1) % BUCKETS] = _gamma_cdf(i + 0.5, p.anum, p.bnum) - _gamma_cdf(i - 0.5, p.anum, p.bnum)
    return w / w.mean()


def arrivals(p: TypeParams, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` arrival times (s from midnight of day 0) of one type: each gap of exp(Gamma(aarr, barr)) rush
    seconds is spent through the buckets at their weight per second (a busy bucket passes faster)."""
    g = rng.gamma(p.aarr, p.barr, n)
    while (big := g > LOG_MAX_GAP).any():
        g[big] = rng.gamma(p.aarr, p.barr, int(big.sum()))
    points = np.cumsum(np.exp(g)) / BUCKET_S  # rush-hour seconds, in bucket units
    w = bucket_weights(p)
    days = int(points[-1] // w.sum()) + 2
    edges = np.concatenate([[0.0], np.cumsum(np.tile(w, days))])
    return np.interp(points, edges, np.arange(len(edges)) * BUCKET_S)


def generate_lublin(spec: LublinSpec) -> Workload:
    """A seeded Lublin-Feitelson workload: ``spec.jobs`` jobs in submit order on ``spec.nodes`` 1-core nodes."""
    rng = np.random.default_rng(spec.seed)
    prng = np.random.default_rng([spec.seed, 7])  # the parameters' own stream
    types = [perturbed(t, spec.jitter, prng) for t in ((INTERACTIVE, BATCH) if spec.typed else (WHOLE,))]
    log2_nodes = float(np.log2(spec.nodes))
    times, kinds = [], []
    for k, t in enumerate(types):
        times.append(arrivals(t, spec.jobs, rng))
        kinds.append(np.full(spec.jobs, k))
    t_all, k_all = np.concatenate(times), np.concatenate(kinds)
    order = np.argsort(t_all, kind="stable")[:spec.jobs]
    submit, kind = np.round(t_all[order]), k_all[order]
    nodes = np.ones(spec.jobs, dtype=np.int64)
    run = np.ones(spec.jobs)
    for k, t in enumerate(types):
        rows = np.flatnonzero(kind == k)
        nodes[rows] = sizes(t, len(rows), log2_nodes, rng)
        run[rows] = runtimes(t, nodes[rows], rng)
    limit = np.ceil(run * rng.uniform(1.0, spec.overestimate, spec.jobs) / 60.0) * 60.0 \
        if spec.overestimate > 1 else run.copy()
    if spec.load > 0 and spec.jobs > 1:
        span = max(float(submit[-1] - submit[0]), 1.0)
        offered = float((nodes * run).sum()) / (spec.nodes * span)
        submit = np.round((submit - submit[0]) * offered / spec.load)
    jobs = JobTable.build(dict(submit=submit, run=run, limit=limit, nodes=nodes, cores=np.ones(spec.jobs),
                               wclass=kind), class_names=("interactive", "batch") if spec.typed else ("any",))
    name = f"lublin-{spec.nodes}-{spec.jobs}-seed{spec.seed}" + (f"-jitter{spec.jitter:g}" if spec.jitter else "")
    return Workload(name=name, jobs=jobs, machine=(spec.nodes, 1))
