"""The packing MILP as an algebraic Pyomo model, solved by HiGHS through Pyomo's persistent interfaces.

Two Pyomo interfaces to HiGHS are offered and measured by ``hetsched bench pack``: ``appsi`` (APPSI
``appsi_highs``, supports a warm start) and ``contrib`` (``pyomo.contrib.solver`` ``highs``, no warm start in
Pyomo 6.10). Same rows as :mod:`slurm_plugin.pack.rows`, so the answers match :mod:`.highs_direct`.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pyomo.environ as pyo

from .highs_direct import HighsRunner, solve_relaxation
from .model import PackingProblem
from .options import Options
from .rows import Rows
from .solver import ERROR, HIGHS_OPTIONS, OPTIMAL, TIME_LIMIT, MilpAnswer

log = logging.getLogger(__name__)
INTERFACES = ("appsi", "contrib")


def build_model(problem: PackingProblem, opts: Options, rows: Rows) -> pyo.ConcreteModel:
    """x[j] jobs per option, y[p] nodes booted per boot pool; maximise net value minus boot cost."""
    m = pyo.ConcreteModel("packing")
    m.J = pyo.RangeSet(0, len(opts) - 1)
    m.P = pyo.Set(initialize=rows.boot_pools)
    ub, down = opts.ub.tolist(), {p: problem.pools[p].down_nodes for p in rows.boot_pools}
    m.x = pyo.Var(m.J, domain=pyo.NonNegativeIntegers, bounds=lambda _m, j: (0, ub[j]))
    m.y = pyo.Var(m.P, domain=pyo.NonNegativeIntegers, bounds=lambda _m, p: (0, down[p]))
    net = opts.net.tolist()
    m.value = pyo.Objective(
        expr=pyo.quicksum(net[j] * m.x[j] for j in m.J) - pyo.quicksum(float(opts.boot_cost[p]) * m.y[p] for p in m.P),
        sense=pyo.maximize)
    all_rows = rows.all()
    m.R = pyo.RangeSet(0, len(all_rows) - 1)
    m.rows = pyo.Constraint(m.R, rule=lambda _m, i: _row_expr(_m, all_rows[i]))
    return m


def _row_expr(m: pyo.ConcreteModel, row) -> object:
    lhs = pyo.quicksum(c * m.x[j] for j, c in zip(row.cols.tolist(), row.coef.tolist()))
    if row.boot_pool >= 0:
        lhs = lhs - row.y_coef * m.y[row.boot_pool]
    return lhs <= row.rhs


class PyomoSolver:
    """:class:`~slurm_plugin.pack.solver.MilpSolver` on the Pyomo model; ``interface`` picks the Pyomo
    HiGHS interface (see module docstring). ``cancel`` reaches into APPSI's highspy object when it can, but
    cannot stop a Pyomo model build: past the cap, :func:`~slurm_plugin.pack.pack` returns on time while the
    build finishes in its thread. APPSI also redirects the process's stdout/stderr descriptors while HiGHS runs.
    Prefer :class:`~slurm_plugin.pack.HighspySolver` in the daemon."""

    def __init__(self, interface: str = "appsi") -> None:
        if interface not in INTERFACES:
            raise ValueError(f"unknown Pyomo interface '{interface}' (valid: {', '.join(INTERFACES)})")
        self.interface = interface
        self.name = f"pyomo-{interface}"
        self._solver = None
        self._lock = threading.Lock()
        self._lp_runner = HighsRunner()

    def solve(self, problem, opts, rows, warm, time_limit_s, rel_gap) -> MilpAnswer:
        t0 = time.perf_counter()
        m = build_model(problem, opts, rows)
        if warm is not None:
            for j, v in enumerate(warm[0].tolist()):
                m.x[j].set_value(v)
            for p in rows.boot_pools:
                m.y[p].set_value(int(warm[1][p]))
        build_s = time.perf_counter() - t0
        try:
            bound, ok, optimal, detail = self._run(m, time_limit_s, rel_gap, warm is not None)
        except Exception as err:  # noqa: BLE001 - a solver failure must become a fallback, not a crash
            log.warning("Pyomo/HiGHS solve failed: %s", err)
            return MilpAnswer(ERROR, build_s=build_s, solve_s=time.perf_counter() - t0 - build_s, detail=str(err))
        solve_s = time.perf_counter() - t0 - build_s
        if not ok:
            return MilpAnswer(ERROR, build_s=build_s, solve_s=solve_s, detail=detail)
        x = np.rint([pyo.value(m.x[j]) for j in m.J]).astype(np.int64)
        y = np.zeros(len(problem.pools), dtype=np.int64)
        for p in rows.boot_pools:
            y[p] = int(round(pyo.value(m.y[p])))
        return MilpAnswer(OPTIMAL if optimal else TIME_LIMIT, x=x, y=y, bound=bound, build_s=build_s,
                          solve_s=solve_s, detail=detail)

    def _run(self, m, time_limit_s: float, rel_gap: float, warm: bool) -> tuple[float | None, bool, bool, str]:
        """Solve; return (bound, has solution, proven optimal, status text)."""
        if self.interface == "appsi":
            from pyomo.contrib.appsi.solvers import Highs

            solver = Highs()
            solver.config.time_limit = max(time_limit_s, 0.01)
            solver.config.mip_gap = rel_gap
            solver.config.warmstart = warm
            solver.config.load_solution = False
            solver.config.log_level = logging.DEBUG  # HiGHS's log goes to our logger at DEBUG, not INFO
            solver.highs_options = dict(HIGHS_OPTIONS)
            with self._lock:
                self._solver = solver
            res = solver.solve(m)
            ok = res.best_feasible_objective is not None
            if ok:
                res.solution_loader.load_vars()
            term = res.termination_condition.name
            return res.best_objective_bound, ok, term == "optimal", term
        from pyomo.contrib.solver.solvers.highs import Highs as ContribHighs

        res = ContribHighs().solve(m, time_limit=max(time_limit_s, 0.01), rel_gap=rel_gap, load_solutions=False,
                                   raise_exception_on_nonoptimal_result=False, solver_options=dict(HIGHS_OPTIONS))
        ok = res.incumbent_objective is not None
        if ok:
            res.solution_loader.load_vars()
        term = res.termination_condition.name
        return res.objective_bound, ok, term == "convergenceCriteriaSatisfied", term

    def relaxation(self, problem, opts, rows, time_limit_s):
        """The LP start comes from highspy for every interface, so the interfaces differ only in the MILP."""
        return solve_relaxation(problem, opts, rows, time_limit_s, self._lp_runner)

    def cancel(self) -> None:
        self._lp_runner.cancel()
        with self._lock:
            inner = getattr(self._solver, "_solver_model", None)
        if inner is not None:
            inner.cancelSolve()
