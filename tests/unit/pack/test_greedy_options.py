"""Options, greedy first-fit-decreasing and the LP rounding: feasibility and the rules they follow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_plugin.pack.check import objective, violations
from slurm_plugin.pack.generate import generate
from slurm_plugin.pack.greedy import greedy_pack, shape_order
from slurm_plugin.pack.lp_round import lp_rounded
from slurm_plugin.pack.model import PackingProblem, Resources
from slurm_plugin.pack.options import build_options, delay_discount, max_jobs, node_share
from slurm_plugin.pack.rows import build_rows
from slurm_plugin.pack.worked_examples import PARAMS, cpu_class, cpu_pool, cpu_shape

from .fakes import BruteForceSolver


@pytest.mark.parametrize("per_job,capacity,expected", [
    (Resources(8, 16, 0), Resources(32, 1000, 0), 4),
    (Resources(8, 16, 0), Resources(1000, 40, 0), 2),
    (Resources(8, 16, 2), Resources(1000, 1000, 3), 1),
    (Resources(0, 0, 0), Resources(10, 10, 10), 0),
    (Resources(4, 0, 0), Resources(3.9999999999, 0, 0), 1),
])
def test_max_jobs(per_job, capacity, expected):
    assert max_jobs(per_job, capacity) == expected


def test_node_share_is_the_busiest_resource():
    pool = cpu_pool("p", 64, mem_per_cpu=2)
    assert node_share(Resources(8, 64, 0), pool) == 0.5
    assert delay_discount(600, 600) == 0.5 and delay_discount(0, 600) == 1.0


def test_options_leave_out_what_cannot_run_or_does_not_fit_or_loses_value():
    pools = [cpu_pool("small", 8), cpu_pool("big", 64), cpu_pool("dear", 64, price=1e6)]
    classes = [cpu_class("p/small", "small"), cpu_class("p/big", "big", speed=0.0), cpu_class("q/big", "big"),
               cpu_class("p/dear", "dear")]
    problem = PackingProblem(tuple(pools), tuple(classes),
                             (cpu_shape("j", 16, 2, band=0, allowed=("p/small", "p/big", "q/big", "p/dear")),),
                             PARAMS)
    opts = build_options(problem)
    assert [problem.classes[k].name for k in opts.klass] == ["q/big"]  # too big / speed 0 / net < 0


def test_greedy_takes_most_urgent_then_largest_first():
    shapes = (cpu_shape("low-big", 16, 1, 0, ("p/x",)), cpu_shape("high-small", 2, 1, 5, ("p/x",)),
              cpu_shape("high-big", 8, 1, 5, ("p/x",)))
    problem = PackingProblem((cpu_pool("x", 16),), (cpu_class("p/x", "x"),), shapes, PARAMS)
    assert [problem.shapes[i].key for i in shape_order(problem)] == ["high-big", "high-small", "low-big"]
    opts = build_options(problem)
    x, _ = greedy_pack(problem, opts)
    assert {problem.shapes[s].key: int(n) for s, n in zip(opts.shape, x)} == {
        "high-big": 1, "high-small": 1, "low-big": 0}


def test_lp_rounding_rounds_down_trims_boots_and_repairs():
    problem = PackingProblem((cpu_pool("cold", 8, free=0, down=3, boot_s=60),), (cpu_class("p/c", "cold"),),
                             (cpu_shape("j", 4, 3, 1, ("p/c",), hours=0.1),), PARAMS)
    opts = build_options(problem)
    # x 1.5 -> 1, y 2.9 -> 3 trimmed to the 1 node x needs; the repair fills that node (x 2) and, booting being
    # free here, boots one more for the third job: 2 nodes, not 3
    x, y = lp_rounded(problem, opts, np.array([1.5]), np.array([2.9]))
    assert (x.tolist(), y.tolist()) == ([3], [2])
    assert not violations(problem, opts, build_rows(problem, opts), x, y)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 400), st.integers(2, 12), st.integers(0, 10**6))
def test_property_greedy_is_feasible_on_generated_instances(n_jobs, n_classes, seed):
    problem = generate(n_jobs, n_classes, seed).problem
    opts = build_options(problem)
    x, y = greedy_pack(problem, opts)
    assert not violations(problem, opts, build_rows(problem, opts), x, y)
    assert objective(opts, x, y) >= 0


_tiny = st.builds(
    lambda free, down, cpus, counts, bands, speed: PackingProblem(
        (cpu_pool("a", 8, free=free, down=down, boot_s=300, price=1.0), cpu_pool("b", 4)),
        (cpu_class("p/a", "a"), cpu_class("p/b", "b", speed=speed)),
        tuple(cpu_shape(f"s{i}", c, n, b, ("p/a", "p/b"), hours=0.5) for i, (c, n, b) in
              enumerate(zip(cpus, counts, bands))), PARAMS),
    st.sampled_from([0, 4, 8]), st.integers(0, 1), st.lists(st.sampled_from([2, 4, 8]), min_size=2, max_size=2),
    st.lists(st.integers(1, 2), min_size=2, max_size=2), st.lists(st.integers(0, 3), min_size=2, max_size=2),
    st.sampled_from([0.5, 1.0, 1.5]))


@settings(max_examples=40, deadline=None)
@given(_tiny)
def test_property_exact_optimum_is_at_least_greedy_and_fits(problem):
    from slurm_plugin.pack import pack

    exact, greedy = pack(problem, BruteForceSolver()), pack(problem, None)
    assert exact.objective >= greedy.objective - 1e-9
    opts = build_options(problem)
    assert len(opts) <= 8  # keeps the brute force small
