"""The placement options of a problem (shape x class x tier) with their objective coefficients.

Every solver (greedy, Pyomo, direct highspy) reads the same :class:`Options`, so they optimise the same
objective over the same variables; see :mod:`slurm_plugin.pack` for the formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .model import BOOT, NOW, TIERS, JobShape, NodeClass, PackingProblem, Pool, Resources

_EPS = 1e-9


@dataclass(frozen=True)
class Options:
    """Column arrays, one entry per option (a variable x = jobs of ``shape`` started on ``klass`` at ``tier``).

    ``net`` is the objective coefficient, ``ub`` the most jobs that can ever go there, ``req`` (n x 3) the
    resources one job uses. ``boot_cost[p]`` is the cost of booting one node of pool ``p``."""

    shape: np.ndarray
    klass: np.ndarray
    pool: np.ndarray
    tier: np.ndarray
    net: np.ndarray
    ub: np.ndarray
    req: np.ndarray
    boot_cost: np.ndarray

    def __len__(self) -> int:
        return int(self.shape.size)


def node_share(per_job: Resources, pool: Pool) -> float:
    """Nodes one job occupies, the busiest resource deciding (8 of 64 cores -> 0.125; over n nodes the
    per-node slices add up to the same figure)."""
    return max((need / have for need, have in zip(per_job.as_tuple(), pool.per_node.as_tuple()) if have > 0),
               default=0.0)


def fits_node(per_job: Resources, nodes: int, pool: Pool) -> bool:
    """True if one job's per-node slice fits on one node of the pool (a job never spans a partial node)."""
    per_node = [need / max(nodes, 1) for need in per_job.as_tuple()]
    return all(need <= have + _EPS for need, have in zip(per_node, pool.per_node.as_tuple()))


def delay_discount(delay_s: float, half_life_s: float) -> float:
    """Worth of a start delayed by ``delay_s``: halves every ``half_life_s`` (1.0 at no delay)."""
    return 2.0 ** (-delay_s / half_life_s) if half_life_s > 0 else 1.0


# a pinned job is worth this much more than a movable one of the same band where both could go: it is queued
# there already and Slurm will start it there, so packing counts its capacity first rather than handing that
# capacity to a movable job of equal worth (which would then be moved to wait behind it). Without it the live
# cycle moved 541, 256, 102 different band-5 GPU jobs in three cycles onto one class that holds 256: the jobs
# moved became pinned and their places were given away again (issue 23). Small: a band weighs 2x.
PINNED_PREFERENCE = 1e-3


def job_value(shape: JobShape, klass: NodeClass, tier: str, pool: Pool, problem: PackingProblem) -> float:
    """Band weight x speed factor x delay discount for one job of ``shape`` on ``klass`` (x 1 +
    :data:`PINNED_PREFERENCE` for a pinned shape)."""
    delay = pool.boot_time_s if tier == BOOT else 0.0
    return (problem.params.band_weight(shape.band) * klass.speed_for(shape.workload)
            * delay_discount(delay, problem.params.half_life_s) * (1.0 + PINNED_PREFERENCE * shape.pinned))


def job_cost(shape: JobShape, klass: NodeClass, pool: Pool, problem: PackingProblem) -> float:
    """Weighted cost of one job: its share of nodes x node-hour price x hours at this class's speed."""
    speed = klass.speed_for(shape.workload)
    hours = shape.hours / speed if speed > 0 else math.inf
    return problem.params.cost_weight * pool.cost_per_hour * node_share(shape.per_job, pool) * hours


def boot_cost(pool: Pool, problem: PackingProblem) -> float:
    """Weighted cost of booting one node: it is paid for while it boots."""
    return problem.params.cost_weight * pool.cost_per_hour * pool.boot_time_s / 3600.0


def eligible(shape: JobShape, klass: NodeClass, pool: Pool) -> bool:
    """A shape may use a class it allows, where its workload runs (speed > 0), its per-node slice fits and the
    pool has as many nodes as the job (a 4-node job moved to a 2-node group would never start)."""
    return klass.name in shape.allowed and klass.speed_for(shape.workload) > 0 and fits_node(
        shape.per_job, shape.nodes, pool) and (pool.size == 0 or shape.nodes <= pool.size)


def tier_capacity(pool: Pool, tier: str) -> Resources:
    """Most a tier of a pool can hold: free now, or every powered-down node booted."""
    if tier == NOW:
        return pool.free_now
    n = pool.down_nodes
    return Resources(pool.per_node.cpus * n, pool.per_node.mem_gb * n, pool.per_node.accels * n)


def max_jobs(per_job: Resources, capacity: Resources) -> int:
    """How many jobs of ``per_job`` fit in ``capacity`` (fluid; resources a job does not use are ignored)."""
    bounds = [math.floor(have / need + _EPS) for need, have in zip(per_job.as_tuple(), capacity.as_tuple())
              if need > 0]
    return max(0, min(bounds)) if bounds else 0


def build_options(problem: PackingProblem) -> Options:
    """Enumerate options with positive net value; options that can only lose value are left out."""
    pools = {p.name: i for i, p in enumerate(problem.pools)}
    cols: dict[str, list] = {k: [] for k in ("shape", "klass", "pool", "tier", "net", "ub", "req")}
    for s, shape in enumerate(problem.shapes):
        req = shape.per_job.as_tuple()
        for c, klass in enumerate(problem.classes):
            pool = problem.pools[pools[klass.pool]]
            if not eligible(shape, klass, pool):
                continue
            cost = job_cost(shape, klass, pool, problem)
            for t, tier in enumerate(TIERS):
                ub = min(shape.count, max_jobs(shape.per_job, tier_capacity(pool, tier)))
                net = job_value(shape, klass, tier, pool, problem) - cost
                if ub <= 0 or net <= _EPS:
                    continue
                for k, v in zip(cols, (s, c, pools[klass.pool], t, net, ub, req)):
                    cols[k].append(v)
    return Options(
        shape=np.asarray(cols["shape"], dtype=np.int64), klass=np.asarray(cols["klass"], dtype=np.int64),
        pool=np.asarray(cols["pool"], dtype=np.int64), tier=np.asarray(cols["tier"], dtype=np.int64),
        net=np.asarray(cols["net"], dtype=float), ub=np.asarray(cols["ub"], dtype=float),
        req=np.asarray(cols["req"], dtype=float).reshape(-1, 3),
        boot_cost=np.asarray([boot_cost(p, problem) for p in problem.pools], dtype=float),
    )
