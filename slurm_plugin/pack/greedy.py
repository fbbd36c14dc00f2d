"""Greedy first-fit-decreasing packing: the baseline, the MILP's warm start and its fallback.

Shapes go in decreasing order of (priority band, node share); each shape takes its options from the best net
value per job down, filling what is free now and booting powered-down nodes only when the jobs they admit are
worth more than the boot cost. The answer is feasible for the MILP (same options, same fluid capacity).
"""

from __future__ import annotations

import math

import numpy as np

from .model import NOW, TIERS, PackingProblem, Resources
from .options import Options, max_jobs, node_share

_EPS = 1e-9


def shape_order(problem: PackingProblem) -> list[int]:
    """Indices of shapes, most urgent first, then largest first (the "decreasing" of FFD)."""
    pools = {p.name: p for p in problem.pools}
    classes = {c.name: c for c in problem.classes}

    def size(i: int) -> float:
        shape = problem.shapes[i]
        return max((node_share(shape.per_job, pools[classes[c].pool]) for c in shape.allowed if c in classes),
                   default=0.0)

    return sorted(range(len(problem.shapes)), key=lambda i: (-problem.shapes[i].band, -size(i), i))


def _fit(req: np.ndarray, left: np.ndarray) -> int:
    return max_jobs(Resources(*req), Resources(*left))


def greedy_pack(problem: PackingProblem, opts: Options, start: tuple[np.ndarray, np.ndarray] | None = None,
                order: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Return (x, y): jobs started per option and nodes booted per pool. With ``start`` (a feasible (x, y)),
    keep it and fill only what it leaves free (the repair step after rounding an LP solution down).
    ``order``: :func:`shape_order` if the caller has it already."""
    x = np.zeros(len(opts), dtype=np.int64) if start is None else start[0].astype(np.int64).copy()
    y = np.zeros(len(problem.pools), dtype=np.int64) if start is None else start[1].astype(np.int64).copy()
    per_node = np.array([p.per_node.as_tuple() for p in problem.pools], dtype=float).reshape(-1, 3)
    now_left = np.array([p.free_now.as_tuple() for p in problem.pools], dtype=float).reshape(-1, 3)
    boot_slack = per_node * y[:, None]
    used = opts.req * x[:, None]
    now = opts.tier == TIERS.index(NOW)
    np.subtract.at(now_left, opts.pool[now], used[now])
    np.subtract.at(boot_slack, opts.pool[~now], used[~now])
    placed = np.bincount(opts.shape, weights=x, minlength=len(problem.shapes)) if len(opts) else \
        np.zeros(len(problem.shapes))
    by_shape: dict[int, list[int]] = {}
    for j in np.argsort(-opts.net, kind="stable"):
        by_shape.setdefault(int(opts.shape[j]), []).append(int(j))
    for s in shape_order(problem) if order is None else order:
        remaining = problem.shapes[s].count - int(placed[s])
        for j in by_shape.get(s, []):
            if remaining <= 0:
                break
            p, req = int(opts.pool[j]), opts.req[j]
            if TIERS[opts.tier[j]] == NOW:
                k = min(remaining, _fit(req, now_left[p]))
                now_left[p] -= k * req
            else:
                k, opened = _place_on_boot(remaining, req, p, opts.net[j], opts.boot_cost[p], boot_slack,
                                           per_node[p], problem.pools[p].down_nodes - int(y[p]))
                y[p] += opened
            x[j] += k
            remaining -= k
    return x, y


def _place_on_boot(remaining: int, req: np.ndarray, p: int, net: float, cost: float, slack: np.ndarray,
                   per_node: np.ndarray, down_left: int) -> tuple[int, int]:
    """Use the slack of already-booted nodes, then boot more if the jobs they admit pay for the boot."""
    k = min(remaining, _fit(req, slack[p]))
    slack[p] -= k * req
    per_node_jobs = _fit(req, per_node)
    if remaining - k <= 0 or per_node_jobs <= 0 or down_left <= 0:
        return k, 0
    opened = min(down_left, math.ceil((remaining - k) / per_node_jobs))
    extra = min(remaining - k, _fit(req, slack[p] + opened * per_node))
    if extra * net <= opened * cost + _EPS:
        return k, 0
    slack[p] += opened * per_node - extra * req
    return k + extra, opened
