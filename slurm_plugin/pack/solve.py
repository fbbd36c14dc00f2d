"""``pack``: the pure packing decision. Greedy first, then the MILP under a hard wall-clock cap."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

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
T = TypeVar("T")
_GRACE_S = 0.1  # how long a cancelled solver gets to hand back its incumbent before we stop waiting


def pack(problem: PackingProblem, solver: MilpSolver | None, time_cap_s: float | None = None) -> PackingResult:
    """Decide which pending jobs start where.

    Runs greedy first-fit-decreasing (always); with a ``solver`` (None: greedy only) it then rounds the LP
    relaxation into a start (:mod:`.lp_round`), warm-starts the MILP from the better of the two with HiGHS's
    own ``time_limit`` set to what is left of ``time_cap_s`` (default ``problem.params.time_cap_s``), and a
    watchdog cancels the solve when the cap (less a 0.1 s grace) passes anyway and waits at most the grace for
    its incumbent; the cap bounds everything but assembling the answer's reasons, which comes after it.
    An infeasible, failed or timed-out solve returns the start with status ``FALLBACK`` and ``detail`` saying
    why; a solver incumbent worth less than the start is replaced by the start, keeping the solver's status and
    bound (both still hold), and ``detail`` says so.
    ``build_s``: enumerating options/rows plus the solver's model build; ``solve_s``: LP start plus solve.
    """
    cap = problem.params.time_cap_s if time_cap_s is None else time_cap_s
    t0 = time.perf_counter()
    opts = build_options(problem)
    rows = build_rows(problem, opts)
    order = shape_order(problem)
    gx, gy = greedy_pack(problem, opts, order=order)
    g_obj = objective(opts, gx, gy)
    prep_s = time.perf_counter() - t0
    if solver is None:
        return _result(problem, opts, (gx, gy), SolveStatus.GREEDY, None, (prep_s, prep_s, 0.0), "greedy", g_obj,
                       "", order)
    if len(opts) == 0:
        return _result(problem, opts, (gx, gy), SolveStatus.OPTIMAL, 0.0, (prep_s, prep_s, 0.0), solver.name, g_obj,
                       "no placement has positive value: nothing starts", order)
    t1 = time.perf_counter()
    budget = cap - prep_s - _GRACE_S
    start = _best_start(solver, problem, opts, rows, (gx, gy), budget, order)
    lp_s = time.perf_counter() - t1
    answer = _solve_with_deadline(solver, problem, opts, rows, start, budget - lp_s, problem.params.mip_rel_gap)
    times = (prep_s, prep_s + answer.build_s, lp_s + answer.solve_s)
    why = _reject_reason(problem, opts, rows, answer)
    if why:
        log.warning("packing falls back to its start (%s): %s", solver.name, why)
        return _result(problem, opts, start, SolveStatus.FALLBACK, None, times, solver.name, g_obj, why, order)
    status = SolveStatus.OPTIMAL if answer.status == OPTIMAL else SolveStatus.FEASIBLE
    best, detail = (answer.x, answer.y), answer.detail
    if objective(opts, *start) > objective(opts, *best):
        best, detail = start, f"{detail}; kept the start, the solver's incumbent was lower"
    return _result(problem, opts, best, status, answer.bound, times, solver.name, g_obj, detail, order)


def _best_start(solver: MilpSolver, problem: PackingProblem, opts: Options, rows: Rows,
                greedy: tuple[np.ndarray, np.ndarray], budget_s: float, order: list[int]
                ) -> tuple[np.ndarray, np.ndarray]:
    """The better of greedy and the rounded LP (greedy if the LP does not solve within half the budget)."""
    lp_budget = budget_s / 2 - _GRACE_S  # the LP's own grace must fit in its half
    if lp_budget <= 0:
        return greedy
    relaxed, late = _with_deadline(lambda: solver.relaxation(problem, opts, rows, lp_budget), solver.cancel,
                                   lp_budget, f"pack-lp-{solver.name}")
    if late or relaxed is None or isinstance(relaxed, Exception):
        return greedy
    rounded = lp_rounded(problem, opts, *relaxed, order=order)
    if violations(problem, opts, rows, *rounded):
        log.warning("rounded LP start is infeasible; starting from greedy")
        return greedy
    return rounded if objective(opts, *rounded) > objective(opts, *greedy) else greedy


def _solve_with_deadline(solver: MilpSolver, problem: PackingProblem, opts: Options, rows: Rows,
                         warm: tuple[np.ndarray, np.ndarray], budget_s: float, rel_gap: float) -> MilpAnswer:
    """The solver's answer, or ``error`` if it raised or was still running after ``budget_s``."""
    if budget_s <= 0:
        return MilpAnswer(ERROR, detail="no time left under the wall-clock cap")
    t0 = time.perf_counter()
    value, late = _with_deadline(lambda: solver.solve(problem, opts, rows, warm, budget_s, rel_gap), solver.cancel,
                                 budget_s, f"pack-{solver.name}")
    cap = f"wall-clock cap {budget_s:.2f} s passed"
    if isinstance(value, MilpAnswer):
        # a solve cancelled at the cap may still carry an incumbent: keep it, say so
        return replace(value, detail=f"{value.detail}; {cap}") if late else value
    detail = f"{type(value).__name__}: {value}" if isinstance(value, Exception) else cap
    return MilpAnswer(ERROR, solve_s=time.perf_counter() - t0, detail=detail)


def _with_deadline(fn: Callable[[], T], cancel: Callable[[], None], budget_s: float,
                   name: str) -> tuple[T | Exception | None, bool]:
    """Run ``fn`` in a daemon thread; after ``budget_s`` call ``cancel`` and wait only a short grace more.
    Returns (its value, the exception it raised, or None if it never returned; whether the cap passed)."""
    box: list = []

    def run() -> None:
        try:
            box.append(fn())
        except Exception as err:  # noqa: BLE001 - the caller turns it into a fallback
            log.exception("%s failed", name)
            box.append(err)

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    worker.join(max(budget_s, 0.0))
    late = worker.is_alive()
    if late:
        log.warning("%s still running after %.2f s: cancelling", name, budget_s)
        cancel()
        worker.join(_GRACE_S)
    return (box[0] if box else None), late


def _reject_reason(problem: PackingProblem, opts: Options, rows: Rows, answer: MilpAnswer) -> str:
    if answer.status == ERROR or answer.x is None or answer.y is None:
        return answer.detail or "solver gave no solution"
    broken = violations(problem, opts, rows, answer.x, answer.y)
    if broken:
        return f"solver answer infeasible: {broken[0]}"
    return ""


def _result(problem: PackingProblem, opts: Options, xy: tuple[np.ndarray, np.ndarray], status: SolveStatus,
            bound: float | None, times: tuple[float, float, float], solver: str, g_obj: float,
            detail: str, order: list[int]) -> PackingResult:
    x, y = xy
    prep_s, build_s, solve_s = times
    obj = objective(opts, x, y)
    if bound is not None:
        bound = max(bound, obj)
    gap = None if bound is None else (bound - obj) / max(abs(bound), 1e-9)
    rank = {s: i for i, s in enumerate(order)}
    used = sorted(np.flatnonzero(x > 0).tolist(),
                  key=lambda j: (rank[int(opts.shape[j])], int(opts.tier[j]), -opts.net[j]))
    assignments = tuple(
        Assignment(shape=problem.shapes[int(opts.shape[j])].key, node_class=problem.classes[int(opts.klass[j])].name,
                   tier=TIERS[int(opts.tier[j])], count=int(x[j]), reason=why)
        for j, why in zip(used, reasons(problem, opts, used, y)))
    power_up = tuple((problem.pools[p].name, int(y[p])) for p in np.flatnonzero(y > 0))
    return PackingResult(status=status, objective=obj, bound=bound, gap=gap, build_s=build_s, solve_s=solve_s,
                         assignments=assignments, power_up=power_up, solver=solver, greedy_objective=g_obj,
                         detail=detail, prep_s=prep_s)
