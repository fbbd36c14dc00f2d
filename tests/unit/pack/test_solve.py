"""pack(): known optima worked out by hand, greedy's behaviour, the fallback rules and the wall-clock cap."""

from __future__ import annotations

import time

import numpy as np
import pytest

from slurm_plugin.pack import SolveStatus, pack
from slurm_plugin.pack.options import build_options
from slurm_plugin.pack.solver import MilpAnswer
from slurm_plugin.pack.worked_examples import EXAMPLES

from .fakes import BruteForceSolver, HangingSolver, ScriptedSolver

BY_NAME = {e.name: e for e in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_exact_solver_finds_the_hand_computed_optimum(example):
    result = pack(example.problem, BruteForceSolver())
    assert result.objective == pytest.approx(example.optimum, abs=1e-9), example.why
    assert result.started() == example.started
    assert sum(n for _, n in result.power_up) == example.booted
    assert result.status is SolveStatus.OPTIMAL and result.gap == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_greedy_gets_the_hand_computed_greedy_value(example):
    result = pack(example.problem, None)
    assert result.status is SolveStatus.GREEDY and result.bound is None and result.gap is None
    assert result.objective == pytest.approx(example.greedy, abs=1e-9), example.why
    assert result.greedy_objective == pytest.approx(example.greedy, abs=1e-9)


def test_greedy_is_the_warm_start_when_there_is_no_lp():
    solver = BruteForceSolver()
    pack(BY_NAME["greedy-blocks-the-big-job"].problem, solver)
    x, _ = solver.warm_seen
    assert x.sum() == 1  # greedy's answer: only the small job, on the faster class


def test_rounded_lp_start_replaces_greedy_when_it_is_better():
    example = BY_NAME["greedy-blocks-the-big-job"]
    opts = build_options(example.problem)
    # the LP optimum (integral here): small job on y, big job on x
    lp_x = np.array([1.0 if (example.problem.classes[k].name, s) in {("p/y", 0), ("p/x", 1)} else 0.0
                     for s, k in zip(opts.shape, opts.klass)])
    solver = BruteForceSolver(lp=(lp_x, np.zeros(len(example.problem.pools))))
    pack(example.problem, solver)
    assert solver.warm_seen[0].sum() == 2


def test_a_solver_that_ignores_its_time_limit_is_cut_off_by_the_cap():
    solver = HangingSolver()
    t0 = time.perf_counter()
    result = pack(BY_NAME["greedy-blocks-the-big-job"].problem, solver, time_cap_s=0.3)
    elapsed = time.perf_counter() - t0
    assert solver.cancelled.is_set()
    assert elapsed < 0.3 + 0.1 + 0.2
    assert result.status is SolveStatus.FALLBACK and "cap" in result.detail
    assert result.objective == pytest.approx(2.0)  # greedy's answer


@pytest.mark.parametrize("solver,detail", [
    (ScriptedSolver(error=RuntimeError("license lost")), "RuntimeError: license lost"),
    (ScriptedSolver(MilpAnswer("error", detail="numerical trouble")), "numerical trouble"),
    (ScriptedSolver(MilpAnswer("optimal", x=np.array([9, 9, 9]), y=np.array([0, 0]), bound=99.0)), "infeasible"),
], ids=["raises", "no-solution", "infeasible-answer"])
def test_solver_failures_fall_back_to_the_start(solver, detail):
    result = pack(BY_NAME["greedy-blocks-the-big-job"].problem, solver)
    assert result.status is SolveStatus.FALLBACK and detail in result.detail
    assert result.objective == pytest.approx(2.0) and result.bound is None


def test_a_solver_answer_below_the_start_is_replaced_by_the_start():
    problem = BY_NAME["greedy-blocks-the-big-job"].problem
    zero = MilpAnswer("optimal", x=np.zeros(len(build_options(problem)), dtype=np.int64), y=np.zeros(2, np.int64),
                      bound=2.8)
    result = pack(problem, ScriptedSolver(zero))
    assert result.objective == pytest.approx(2.0) and "kept the start" in result.detail
    assert result.gap == pytest.approx((2.8 - 2.0) / 2.8)


def test_no_time_left_means_greedy():
    result = pack(BY_NAME["greedy-blocks-the-big-job"].problem, BruteForceSolver(), time_cap_s=0.0)
    assert result.status is SolveStatus.FALLBACK and "no time left" in result.detail


def test_every_assignment_says_why():
    result = pack(BY_NAME["greedy-blocks-the-big-job"].problem, BruteForceSolver())
    reasons = {a.node_class: a.reason for a in result.assignments}
    assert "band 1 web -> p/y now: speed 0.90x" in reasons["p/y"]
    assert "better-paying p/x now full or taken by more valuable jobs" in reasons["p/y"]
    assert "only option" in reasons["p/x"]
    boot = pack(BY_NAME["boot-only-what-pays"].problem, BruteForceSolver())
    assert "boots 1 node(s) of cold (600 s)" in boot.assignments[0].reason
