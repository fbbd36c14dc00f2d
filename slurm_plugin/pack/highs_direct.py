"""The packing MILP built directly as a HiGHS matrix (highspy): the fast alternative to the Pyomo model.

Same variables and rows as :mod:`slurm_plugin.pack.pyomo_model` (both read :mod:`slurm_plugin.pack.rows`),
but the matrix goes to HiGHS in one ``passModel`` call, so build time is numpy time, not Pyomo expression time.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

import highspy
import numpy as np

from .model import PackingProblem
from .options import Options
from .rows import Rows
from .solver import ERROR, HIGHS_OPTIONS, OPTIMAL, TIME_LIMIT, MilpAnswer

log = logging.getLogger(__name__)
_STDOUT_LOCK = threading.Lock()


def to_lp(problem: PackingProblem, opts: Options, rows: Rows, relax: bool = False) -> highspy.HighsLp:
    """The MILP as a row-wise HighsLp: columns are the options, then y of every boot pool."""
    n, boot = len(opts), list(rows.boot_pools)
    y_col = {p: n + i for i, p in enumerate(boot)}
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n + len(boot), len(rows.all())
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.col_cost_ = np.concatenate([opts.net, -opts.boot_cost[boot]]) if boot else opts.net.copy()
    lp.col_lower_ = np.zeros(lp.num_col_)
    lp.col_upper_ = np.concatenate([opts.ub, [float(problem.pools[p].down_nodes) for p in boot]])
    index, value, start = [], [], [0]
    for row in rows.all():
        cols, vals = row.cols, row.coef
        if row.boot_pool >= 0:
            cols, vals = np.append(cols, y_col[row.boot_pool]), np.append(vals, -row.y_coef)
        index.append(cols)
        value.append(vals)
        start.append(start[-1] + cols.size)
    lp.row_lower_ = np.full(lp.num_row_, -highspy.kHighsInf)
    lp.row_upper_ = np.array([r.rhs for r in rows.all()], dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.array(start, dtype=np.int32)
    lp.a_matrix_.index_ = np.concatenate(index).astype(np.int32) if index else np.zeros(0, np.int32)
    lp.a_matrix_.value_ = np.concatenate(value) if value else np.zeros(0)
    if not relax:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * lp.num_col_
    return lp


def lp_bound(problem: PackingProblem, opts: Options, rows: Rows) -> float:
    """Optimum of the LP relaxation (an upper bound on every integer answer)."""
    h = _new_highs(time_limit_s=60.0, rel_gap=0.0)
    h.passModel(to_lp(problem, opts, rows, relax=True))
    h.run()
    return float(h.getInfo().objective_function_value)


class HighsRunner:
    """Runs one ``highspy.Highs`` at a time so that :meth:`cancel`, from any thread, can stop it; a cancel that
    comes while the model is still being built makes the next :meth:`run` return at once. :meth:`arm` clears
    it at the start of each solve."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: highspy.Highs | None = None
        self._cancelled = False

    def arm(self) -> None:
        with self._lock:
            self._cancelled = False

    def run(self, h: highspy.Highs) -> bool:
        """Run ``h``; False if it was cancelled before it started."""
        with self._lock:
            if self._cancelled:
                return False
            self._running = h
        try:
            h.run()
        finally:
            with self._lock:
                self._running = None
        return True

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._running is not None:
                self._running.cancelSolve()


def solve_relaxation(problem: PackingProblem, opts: Options, rows: Rows, time_limit_s: float,
                     runner: HighsRunner | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """(x, y) of the LP relaxation's optimum (y per pool), or None if it did not reach optimality in time."""
    runner = runner or HighsRunner()
    runner.arm()
    h = _new_highs(time_limit_s=time_limit_s, rel_gap=0.0)
    h.passModel(to_lp(problem, opts, rows, relax=True))
    if not runner.run(h) or h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    values = np.asarray(h.getSolution().col_value)
    y = np.zeros(len(problem.pools))
    y[list(rows.boot_pools)] = values[len(opts):]
    return values[:len(opts)], y


def _quiet_highs() -> highspy.Highs:
    """A Highs instance whose banner ("Running HiGHS ..."), which HiGHS 1.16 prints to the process's standard
    output when the instance is made, before ``output_flag`` can be set, goes to standard error instead: stdout
    may be a ``--json`` document."""
    with _STDOUT_LOCK:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            os.dup2(2, 1)
            return highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def _new_highs(time_limit_s: float, rel_gap: float) -> highspy.Highs:
    h = _quiet_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", max(time_limit_s, 0.01))
    h.setOptionValue("mip_rel_gap", rel_gap)
    for key, value in HIGHS_OPTIONS.items():
        h.setOptionValue(key, value)
    return h


class HighspySolver:
    """:class:`~slurm_plugin.pack.solver.MilpSolver` on a HiGHS matrix passed in one call; cancellable."""

    name = "highspy"

    def __init__(self) -> None:
        self._runner = HighsRunner()

    def solve(self, problem, opts, rows, warm, time_limit_s, rel_gap) -> MilpAnswer:
        t0 = time.perf_counter()
        self._runner.arm()
        h = _new_highs(time_limit_s, rel_gap)
        lp = to_lp(problem, opts, rows)
        h.passModel(lp)
        boot = list(rows.boot_pools)
        if warm is not None:
            sol = highspy.HighsSolution()
            sol.col_value = list(np.concatenate([warm[0], warm[1][boot]]).astype(float))
            sol.value_valid = True
            h.setSolution(sol)
        build_s = time.perf_counter() - t0
        if not self._runner.run(h):
            return MilpAnswer(ERROR, build_s=build_s, detail="cancelled while the model was being built")
        solve_s = time.perf_counter() - t0 - build_s
        return _answer(h, problem, len(opts), boot, build_s, solve_s)

    def cancel(self) -> None:
        self._runner.cancel()

    def relaxation(self, problem, opts, rows, time_limit_s):
        return solve_relaxation(problem, opts, rows, time_limit_s, self._runner)


def _answer(h: highspy.Highs, problem: PackingProblem, n: int, boot: list[int], build_s: float,
            solve_s: float) -> MilpAnswer:
    status = h.getModelStatus()
    info = h.getInfo()
    if info.primal_solution_status != 2:  # 2 = kSolutionStatusFeasible
        return MilpAnswer(ERROR, build_s=build_s, solve_s=solve_s, detail=h.modelStatusToString(status))
    values = np.rint(np.asarray(h.getSolution().col_value)).astype(np.int64)
    y = np.zeros(len(problem.pools), dtype=np.int64)
    y[boot] = values[n:]
    kind = OPTIMAL if status == highspy.HighsModelStatus.kOptimal else TIME_LIMIT
    return MilpAnswer(kind, x=values[:n], y=y, bound=float(info.mip_dual_bound), build_s=build_s,
                      solve_s=solve_s, detail=h.modelStatusToString(status))
