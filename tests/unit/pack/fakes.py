"""In-memory solvers for unit tests: exhaustive search (the exact optimum of tiny problems) and misbehaving ones."""

from __future__ import annotations

import itertools
import threading

import numpy as np

from slurm_plugin.pack.check import objective, violations
from slurm_plugin.pack.solver import ERROR, OPTIMAL, MilpAnswer


class BruteForceSolver:
    """Tries every integer (x, y) within the bounds: exact, for problems with a few small variables."""

    name = "brute-force"

    def __init__(self, lp: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.lp = lp
        self.warm_seen = None

    def solve(self, problem, opts, rows, warm, time_limit_s, rel_gap):
        self.warm_seen = warm
        x_ranges = [range(int(u) + 1) for u in opts.ub]
        y_ranges = [range(p.down_nodes + 1) for p in problem.pools]
        best, best_xy = -np.inf, None
        for values in itertools.product(*x_ranges, *y_ranges):
            x, y = np.array(values[:len(opts)], dtype=np.int64), np.array(values[len(opts):], dtype=np.int64)
            if objective(opts, x, y) > best and not violations(problem, opts, rows, x, y):
                best, best_xy = objective(opts, x, y), (x, y)
        return MilpAnswer(OPTIMAL, x=best_xy[0], y=best_xy[1], bound=best)

    def cancel(self) -> None:
        pass

    def relaxation(self, problem, opts, rows, time_limit_s):
        return self.lp


class HangingSolver:
    """Never returns until cancelled (a solver that ignores its own time limit)."""

    name = "hanging"

    def __init__(self) -> None:
        self.cancelled = threading.Event()

    def solve(self, problem, opts, rows, warm, time_limit_s, rel_gap):
        self.cancelled.wait(60)
        return MilpAnswer(ERROR, detail="cancelled")

    def cancel(self) -> None:
        self.cancelled.set()

    def relaxation(self, problem, opts, rows, time_limit_s):
        return None


class ScriptedSolver:
    """Answers a fixed (x, y), or raises ``error``."""

    name = "scripted"

    def __init__(self, answer: MilpAnswer | None = None, error: Exception | None = None) -> None:
        self.answer, self.error = answer, error

    def solve(self, problem, opts, rows, warm, time_limit_s, rel_gap):
        if self.error:
            raise self.error
        return self.answer

    def cancel(self) -> None:
        pass

    def relaxation(self, problem, opts, rows, time_limit_s):
        return None
