"""A MIP start better than greedy: round the LP relaxation's optimum down and let greedy fill what is left."""

from __future__ import annotations

import logging

import numpy as np

from .check import objective
from .greedy import greedy_pack
from .model import BOOT, TIERS, PackingProblem
from .options import Options

log = logging.getLogger(__name__)


def lp_rounded(problem: PackingProblem, opts: Options, x_lp: np.ndarray, y_lp: np.ndarray,
               order: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) from an LP optimum: x rounded down, y rounded up but no further than those x need, then the
    greedy repair. Feasible whenever (x_lp, y_lp) is (up to 1e-6)."""
    x = np.floor(x_lp + 1e-6).astype(np.int64)
    y = np.ceil(y_lp - 1e-6).astype(np.int64)
    y = np.minimum(y, [p.down_nodes for p in problem.pools])
    x, y = greedy_pack(problem, opts, start=(x, _trim_boot(problem, opts, x, y)), order=order)
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
