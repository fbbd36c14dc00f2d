"""Aggregation of pending jobs into shapes, and decide_moves (pinned jobs are never moved)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_plugin.pack import (Assignment, PackingResult, PendingJob, Resources, SolveStatus, aggregate,
                               allowed_classes, classes_from_site, decide_moves, problem_from_jobs)
from slurm_plugin.site import load_site

POOLS, CLASSES = classes_from_site(load_site("demo"))


def job(job_id: str = "1", **kw) -> PendingJob:
    """Builder: a flexible 8-core web job in ``batch`` unless overridden."""
    base = PendingJob(job_id=job_id, per_job=Resources(8, 16, 0), hours=2.0, workload="web", band=3,
                      partitions=("batch",))
    return replace(base, **kw)


def result(*assignments: Assignment) -> PackingResult:
    return PackingResult(status=SolveStatus.OPTIMAL, objective=0.0, bound=0.0, gap=0.0, build_s=0.0, solve_s=0.0,
                         assignments=assignments)


@pytest.mark.parametrize("jobs,counts", [
    ([job("1"), job("2"), job("3")], [3]),
    ([job("1"), job("2", band=4)], [1, 1]),
    ([job("1"), job("2", partitions=("batch", "riscv"))], [1, 1]),
    ([job("1"), job("2", per_job=Resources(8, 32, 0))], [1, 1]),
    ([job("1"), job("2", hours=4.0)], [1, 1]),
    ([job("1"), job("2", workload="video-render")], [1, 1]),
    ([job("1"), job("2", pinned=True)], [1, 1]),
    ([job("1"), job("2", partitions=("nosuch",))], [1]),
    ([job("1", partitions=("batch", "x86")), job("2", partitions=("x86", "batch"))], [2]),
], ids=["same", "band", "allowed", "memory", "hours", "workload", "pinned", "no-class", "order-free"])
def test_jobs_aggregate_into_shapes_by_what_packing_sees(jobs, counts):
    shapes, members = aggregate(jobs, CLASSES)
    assert [s.count for s in shapes] == counts
    assert sum(len(v) for v in members.values()) == sum(counts)
    assert all(len(members[s.key]) == s.count for s in shapes)


def test_members_keep_input_order():
    shapes, members = aggregate([job("9"), job("3"), job("5")], CLASSES)
    assert members[shapes[0].key] == ("9", "3", "5")


@pytest.mark.parametrize("j,expected", [
    (job(), {"batch/cpu-x86", "batch/cpu-arm"}),
    (job(archs=("aarch64",)), {"batch/cpu-arm"}),
    (job(partitions=("gpu",), per_job=Resources(8, 16, 1), workload="ai-training"), {"gpu/gpu-a100", "gpu/gpu-h100"}),
    (job(partitions=("gpu", "npu"), per_job=Resources(8, 16, 1), accel_types=("h100", "ascend910b")),
     {"gpu/gpu-h100", "npu/npu"}),
    (job(partitions=("batch",), per_job=Resources(8, 16, 1)), set()),
], ids=["batch", "arch", "gpu", "accel-types", "needs-accel-in-cpu-partition"])
def test_allowed_classes(j, expected):
    assert allowed_classes(j, CLASSES) == frozenset(expected)


def _one_shape_result(jobs, node_class, count):
    shapes, _ = aggregate(jobs, CLASSES)
    return result(Assignment(shapes[0].key, node_class, "now", count, "because"))


def test_assigned_jobs_move_in_rank_order_and_the_rest_stay():
    jobs = [job("1"), job("2"), job("3")]
    problem = problem_from_jobs(jobs, POOLS, CLASSES)
    moves = decide_moves(jobs, problem, _one_shape_result(jobs, "batch/cpu-arm", 2))
    assert [(m.job_id, m.partition, m.features, m.reason) for m in moves] == [
        ("1", "batch", ("aarch64",), "because"), ("2", "batch", ("aarch64",), "because")]


def test_pinned_job_is_never_moved():
    jobs = [job("1", pinned=True, partitions=("batch",), current_partition="batch")]
    problem = problem_from_jobs(jobs, POOLS, CLASSES)
    assert decide_moves(jobs, problem, _one_shape_result(jobs, "batch/cpu-arm", 1)) == []


@pytest.mark.parametrize("current_partition,current_features,moved", [
    ("batch", ("aarch64",), False),
    ("batch", (), True),
    ("arm", (), True),
])
def test_no_move_when_already_there(current_partition, current_features, moved):
    jobs = [job("1", partitions=("batch", "arm"), current_partition=current_partition,
                current_features=current_features)]
    problem = problem_from_jobs(jobs, POOLS, CLASSES)
    moves = decide_moves(jobs, problem, _one_shape_result(jobs, "batch/cpu-arm", 1))
    assert bool(moves) is moved


def test_single_class_partition_needs_no_feature_to_be_there():
    jobs = [job("1", partitions=("arm", "x86"), current_partition="arm")]
    problem = problem_from_jobs(jobs, POOLS, CLASSES)
    assert decide_moves(jobs, problem, _one_shape_result(jobs, "arm/cpu-arm", 1)) == []


_jobs = st.lists(st.builds(
    lambda i, cpus, band, parts, pinned: job(str(i), per_job=Resources(cpus, 2 * cpus, 0), band=band,
                                             partitions=parts, pinned=pinned),
    st.integers(0, 10**6), st.sampled_from([1, 4, 8, 16]), st.integers(0, 7),
    st.sampled_from([("batch",), ("arm",), ("x86", "arm"), ("batch", "riscv")]), st.booleans()),
    min_size=1, max_size=30, unique_by=lambda j: j.job_id)


@settings(max_examples=60, deadline=None)
@given(_jobs)
def test_property_pinned_never_moved_and_moves_respect_what_the_job_allows(jobs):
    from slurm_plugin.pack import pack

    problem = problem_from_jobs(jobs, POOLS, CLASSES)
    moves = decide_moves(jobs, problem, pack(problem, None))
    by_id = {j.job_id: j for j in jobs}
    assert len({m.job_id for m in moves}) == len(moves)
    for m in moves:
        assert not by_id[m.job_id].pinned
        assert m.partition in by_id[m.job_id].partitions
