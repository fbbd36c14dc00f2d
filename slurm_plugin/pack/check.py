"""Value and feasibility of a candidate (x, y), computed the same way for every solver."""

from __future__ import annotations

import numpy as np

from .model import PackingProblem
from .options import Options
from .rows import Rows

_TOL = 1e-6


def objective(opts: Options, x: np.ndarray, y: np.ndarray) -> float:
    """Net value of the started jobs minus the cost of the booted nodes."""
    return float(opts.net @ x - opts.boot_cost @ y)


def violations(problem: PackingProblem, opts: Options, rows: Rows, x: np.ndarray, y: np.ndarray) -> list[str]:
    """Every broken constraint or bound, in words (empty: feasible)."""
    out = [f"x[{j}]={x[j]} outside [0, {opts.ub[j]:g}]" for j in np.flatnonzero((x < 0) | (x > opts.ub + _TOL))]
    out += [f"y[{p}]={y[p]} outside [0, {pool.down_nodes}]" for p, pool in enumerate(problem.pools)
            if not 0 <= y[p] <= pool.down_nodes]
    for i, row in enumerate(rows.all()):
        lhs = float(row.coef @ x[row.cols]) - (row.y_coef * y[row.boot_pool] if row.boot_pool >= 0 else 0.0)
        if lhs > row.rhs + _TOL * max(1.0, abs(row.rhs)):
            out.append(f"row {i}: {lhs:g} > {row.rhs:g}")
    return out
