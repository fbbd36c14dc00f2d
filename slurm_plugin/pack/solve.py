"""``pack``: the pure packing decision. Greedy first, then the MILP under a hard wall-clock cap."""

from __future__ import annotations

import logging
import threading
import time

import numpy as np

from .check import objective, violations
from .explain import reasons
from .greedy import greedy_pack, shape_order
from .lp_round import lp_rounded
from .model import TIERS, Assignment, PackingProblem, PackingResult, SolveStatus
from .options import Options, build_options
from .rows import Rows, build_rows
from .solver import ERROR, OPTIMAL, MilpAnswer, MilpSolver

log = logging.getLogger(__name__)
_GRACE_S = 0.5  # how long a cancelled solver thread gets to notice before we give up on it


def pack(problem: PackingProblem, solver: MilpSolver | None, time_cap_s: float | None = None) -> PackingResult:
    """Decide which pending jobs start where.

    Runs greedy first-fit-decreasing (always); with a ``solver`` (None: greedy only) it then rounds the LP
    relaxation into a start (:mod:`.lp_round`), warm-starts the MILP from the better of the two with HiGHS's
    own ``time_limit`` set to what is left of ``time_cap_s`` (default ``problem.params.time_cap_s``), and a
    watchdog cancels the solve when the cap passes anyway. An infeasible, failed or timed-out solve returns the
    start with status ``FALLBACK`` and ``detail`` saying why; a solver incumbent worth less than the start is
    replaced by the start, keeping the solver's status and bound (both still hold), and ``detail`` says so.
    ``build_s``: enumerating options/rows plus the solver's model build; ``solve_s``: LP start plus solve.
    """
    cap = problem.params.time_cap_s if time_cap_s is None else time_cap_s
    t0 = time.perf_counter()
    opts = build_options(problem)
    rows = build_rows(problem, opts)
    gx, gy = greedy_pack(problem, opts)
    g_obj = objective(opts, gx, gy)
    prep_s = time.perf_counter() - t0
    if solver is None:
        return _result(problem, opts, (gx, gy), SolveStatus.GREEDY, None, (prep_s, 0.0), "greedy", g_obj, "")
    t1 = time.perf_counter()
    start = _best_start(problem, opts, rows, (gx, gy), cap - prep_s)
    lp_s = time.perf_counter() - t1
    answer = _solve_with_deadline(solver, problem, opts, rows, start, cap - prep_s - lp_s, problem.params.mip_rel_gap)
    times = (prep_s + answer.build_s, lp_s + answer.solve_s)
    why = _reject_reason(problem, opts, rows, answer)
    if why:
        log.warning("packing falls back to its start (%s): %s", solver.name, why)
        return _result(problem, opts, start, SolveStatus.FALLBACK, None, times, solver.name, g_obj, why)
    status = SolveStatus.OPTIMAL if answer.status == OPTIMAL else SolveStatus.FEASIBLE
    best, detail = (answer.x, answer.y), answer.detail
    if objective(opts, *start) > objective(opts, *best):
        best, detail = start, f"{detail}; kept the start, the solver's incumbent was lower"
    return _result(problem, opts, best, status, answer.bound, times, solver.name, g_obj, detail)


def _best_start(problem: PackingProblem, opts: Options, rows: Rows, greedy: tuple[np.ndarray, np.ndarray],
                budget_s: float) -> tuple[np.ndarray, np.ndarray]:
    """The better of greedy and the rounded LP (greedy if the LP does not solve within half the budget)."""
    if len(opts) == 0 or budget_s <= 0:
        return greedy
    rounded = lp_rounded(problem, opts, rows, budget_s / 2)
    if rounded is None or violations(problem, opts, rows, *rounded):
        return greedy
    return rounded if objective(opts, *rounded) > objective(opts, *greedy) else greedy


def _solve_with_deadline(solver: MilpSolver, problem: PackingProblem, opts: Options, rows: Rows,
                         warm: tuple[np.ndarray, np.ndarray], budget_s: float, rel_gap: float) -> MilpAnswer:
    """Run the solver in a thread; past ``budget_s`` cancel it and answer ``error`` (the caller falls back)."""
    if budget_s <= 0 or len(opts) == 0:
        return MilpAnswer(ERROR, detail="no time left" if budget_s <= 0 else "nothing to place")
    box: list[MilpAnswer] = []

    def run() -> None:
        try:
            box.append(solver.solve(problem, opts, rows, warm, budget_s, rel_gap))
        except Exception as err:  # noqa: BLE001 - any solver failure becomes a fallback
            log.exception("solver %s failed", solver.name)
            box.append(MilpAnswer(ERROR, detail=f"{type(err).__name__}: {err}"))

    t0 = time.perf_counter()
    worker = threading.Thread(target=run, name=f"pack-{solver.name}", daemon=True)
    worker.start()
    worker.join(budget_s)
    if worker.is_alive():
        solver.cancel()
        worker.join(_GRACE_S)
        elapsed = time.perf_counter() - t0
        return MilpAnswer(ERROR, solve_s=elapsed, detail=f"wall-clock cap {budget_s:.2f} s passed")
    return box[0]


def _reject_reason(problem: PackingProblem, opts: Options, rows: Rows, answer: MilpAnswer) -> str:
    if answer.status == ERROR or answer.x is None or answer.y is None:
        return answer.detail or "solver gave no solution"
    broken = violations(problem, opts, rows, answer.x, answer.y)
    if broken:
        return f"solver answer infeasible: {broken[0]}"
    return ""


def _result(problem: PackingProblem, opts: Options, xy: tuple[np.ndarray, np.ndarray], status: SolveStatus,
            bound: float | None, times: tuple[float, float], solver: str, g_obj: float, detail: str) -> PackingResult:
    x, y = xy
    build_s, solve_s = times
    obj = objective(opts, x, y)
    if bound is not None:
        bound = max(bound, obj)
    gap = None if bound is None else (bound - obj) / max(abs(bound), 1e-9)
    order = {s: i for i, s in enumerate(shape_order(problem))}
    used = sorted(np.flatnonzero(x > 0).tolist(),
                  key=lambda j: (order[int(opts.shape[j])], int(opts.tier[j]), -opts.net[j]))
    assignments = tuple(
        Assignment(shape=problem.shapes[int(opts.shape[j])].key, node_class=problem.classes[int(opts.klass[j])].name,
                   tier=TIERS[int(opts.tier[j])], count=int(x[j]), reason=why)
        for j, why in zip(used, reasons(problem, opts, used, y)))
    power_up = tuple((problem.pools[p].name, int(y[p])) for p in np.flatnonzero(y > 0))
    return PackingResult(status=status, objective=obj, bound=bound, gap=gap, build_s=build_s, solve_s=solve_s,
                         assignments=assignments, power_up=power_up, solver=solver, greedy_objective=g_obj,
                         detail=detail)
