"""The constraint rows of the packing MILP, as index groups over the options (shared by every MILP builder).

For option j (x_j jobs of shape s_j on class k_j in pool p_j at tier t_j) and pool p (y_p nodes booted):
- demand:   sum_{j: s_j = s} x_j <= count_s                                   for every shape s
- now:      sum_{j: p_j = p, t_j = now}  req_{j,r} x_j <= free_now_{p,r}          for every pool p, resource r
- boot:     sum_{j: p_j = p, t_j = boot} req_{j,r} x_j - per_node_{p,r} y_p <= 0   for every pool p, resource r
- bounds:   0 <= x_j <= ub_j,  0 <= y_p <= down_nodes_p,  all integer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import BOOT, NOW, TIERS, PackingProblem
from .options import Options


@dataclass(frozen=True)
class Row:
    """One constraint: sum(coef * x[cols]) (- y_coef * y[pool] for boot rows) <= rhs."""

    cols: np.ndarray
    coef: np.ndarray
    rhs: float
    boot_pool: int = -1
    y_coef: float = 0.0


@dataclass(frozen=True)
class Rows:
    demand: tuple[Row, ...]
    capacity: tuple[Row, ...]
    boot_pools: tuple[int, ...]

    def all(self) -> tuple[Row, ...]:
        return self.demand + self.capacity


def _groups(keys: np.ndarray) -> list[np.ndarray]:
    """Option indices grouped by equal key, in key order."""
    if keys.size == 0:
        return []
    order = np.argsort(keys, kind="stable")
    cuts = np.flatnonzero(np.diff(keys[order])) + 1
    return np.split(order, cuts)


def build_rows(problem: PackingProblem, opts: Options) -> Rows:
    """Group the options into the demand and capacity rows above; rows with no non-zero are left out."""
    demand = tuple(Row(cols=g, coef=np.ones(g.size), rhs=float(problem.shapes[int(opts.shape[g[0]])].count))
                   for g in _groups(opts.shape))
    capacity: list[Row] = []
    boot_pools: set[int] = set()
    boot = TIERS.index(BOOT)
    for g in _groups(opts.pool * len(TIERS) + opts.tier):
        p, tier = int(opts.pool[g[0]]), TIERS[int(opts.tier[g[0]])]
        pool = problem.pools[p]
        for r in range(3):
            coef = opts.req[g, r]
            nz = coef > 0
            if not nz.any():
                continue
            if tier == NOW:
                capacity.append(Row(cols=g[nz], coef=coef[nz], rhs=pool.free_now.as_tuple()[r]))
            else:
                boot_pools.add(p)
                capacity.append(Row(cols=g[nz], coef=coef[nz], rhs=0.0, boot_pool=p,
                                    y_coef=pool.per_node.as_tuple()[r]))
        if int(opts.tier[g[0]]) == boot:
            boot_pools.add(p)
    return Rows(demand=demand, capacity=tuple(capacity), boot_pools=tuple(sorted(boot_pools)))
