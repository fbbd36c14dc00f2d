"""Benchmarks: factors against the group median, slow nodes drained, small groups never judged."""

from __future__ import annotations

from slurm_plugin.hw.bench import analyze, drains, measure


def res(g, b):
    return {"gemm_gflops": g, "triad_gbs": b}


def test_a_node_20_percent_below_its_group_median_is_slow_and_drained():
    results = {"a1": res(100, 10), "a2": res(98, 10.2), "a3": res(75, 10), "a4": res(101, 9.9),
               "x1": res(10, 1), "x2": res(50, 5)}
    groups = {"a1": "arm", "a2": "arm", "a3": "arm", "a4": "arm", "x1": "x86", "x2": "x86"}
    verdicts = {v.node: v for v in analyze(results, groups, threshold=0.2)}
    assert verdicts["a3"].slow == ("gemm_gflops",) and verdicts["a3"].factors["gemm_gflops"] == 0.758
    assert not verdicts["a1"].slow and not verdicts["a4"].slow
    assert not verdicts["x1"].slow  # a group of two: reported, never judged
    (drain,) = drains(list(verdicts.values()), 0.2).actions
    assert drain.nodes == ("a3",) and drain.action == "DRAIN"
    assert drain.reason == "bench: degraded, gemm_gflops 0.76 of arm median (limit 0.80)"


def test_measure_returns_positive_numbers():
    got = measure(n=64, triad_mb=1, repeats=1)
    assert got["gemm_gflops"] > 0 and got["triad_gbs"] > 0
