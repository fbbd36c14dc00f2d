"""A MIP start better than greedy: solve the LP relaxation, round it down, let greedy fill what is left."""

from __future__ import annotations

import logging

import numpy as np

from .check import objective
from .greedy import greedy_pack
from .highs_direct import solve_relaxation
from .model import BOOT, TIERS, PackingProblem
from .options import Options
from .rows import Rows

log = logging.getLogger(__name__)


def lp_rounded(problem: PackingProblem, opts: Options, rows: Rows, time_limit_s: float
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """(x, y) from the LP optimum: y rounded up where the rounded-down x needs it, x rounded down, then the
    greedy repair. Feasible by construction; None if the LP did not solve in ``time_limit_s``."""
    relaxed = solve_relaxation(problem, opts, rows, time_limit_s)
    if relaxed is None:
        return None
    x_lp, y_lp = relaxed
    x = np.floor(x_lp + 1e-6).astype(np.int64)
    y = np.ceil(y_lp - 1e-6).astype(np.int64)
    y = np.minimum(y, [p.down_nodes for p in problem.pools])
    x, y = greedy_pack(problem, opts, start=(x, _trim_boot(problem, opts, x, y)))
    log.debug("LP-rounded start %.3f", objective(opts, x, y))
    return x, y


def _trim_boot(problem: PackingProblem, opts: Options, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Boot no more nodes than the rounded-down boot jobs need (rounding y up may have overshot)."""
    boot = opts.tier == TIERS.index(BOOT)
    per_node = np.array([p.per_node.as_tuple() for p in problem.pools], dtype=float).reshape(-1, 3)
    used = np.zeros_like(per_node)
    np.add.at(used, opts.pool[boot], opts.req[boot] * x[boot, None])
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(per_node > 0, np.ceil(used / per_node - 1e-9), 0.0).max(axis=1)
    return np.minimum(y, need.astype(np.int64))
