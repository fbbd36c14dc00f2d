"""Benchmarks as Slurm jobs: a small node-local suite (CPU GEMM, STREAM-like triad memory bandwidth) whose
per-node results are compared within each node group; a node well below its group's median is slow (degraded).

:func:`measure` runs on the node (inside the job); :func:`analyze` is pure: results in, per-node performance
factors (node / group median, per metric) and the slow nodes out; :func:`drains` turns those into actions;
:func:`factor_overlay` the measured speed factors per node group that the site model reads.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..decision.actions import Cause, Decision, DrainNodes

METRICS = ("gemm_gflops", "triad_gbs")


def measure(n: int = 512, triad_mb: int = 32, repeats: int = 3) -> dict[str, float]:
    """Best of ``repeats``: float64 GEMM of two n x n matrices (GFLOP/s) and the triad a = b + 3 c over arrays of
    ``triad_mb`` MB each (GB/s counted as 3 arrays moved)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = rng.random((n, n)), rng.random((n, n))
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = max(best, 2 * n ** 3 / (time.perf_counter() - t) / 1e9)
    size = triad_mb * (1 << 20) // 8
    x, y, z = np.zeros(size), np.ones(size), np.full(size, 2.0)
    bw = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        np.add(y, np.multiply(z, 3.0, out=x), out=x)
        bw = max(bw, 3 * 8 * size / (time.perf_counter() - t) / 1e9)
    return {"gemm_gflops": round(best, 3), "triad_gbs": round(bw, 3)}


@dataclass(frozen=True)
class NodeBench:
    """One node: its group, its factor per metric (node / group median) and whether it is slow."""

    node: str
    group: str
    factors: Mapping[str, float]
    slow: tuple[str, ...]  # the metrics below (1 - threshold) of the median


def analyze(results: Mapping[str, Mapping[str, float]], groups: Mapping[str, str], threshold: float = 0.2,
            min_group: int = 3) -> list[NodeBench]:
    """Per-node factors against the median of its node group; a group with fewer than ``min_group`` results is
    only reported (a median of one or two says nothing), never judged slow. Pure."""
    by_group: dict[str, list[str]] = {}
    for node in results:
        by_group.setdefault(groups.get(node, "?"), []).append(node)
    out = []
    for group, nodes in sorted(by_group.items()):
        medians = {m: statistics.median(results[n][m] for n in nodes) for m in METRICS}
        for node in sorted(nodes):
            factors = {m: round(results[node][m] / medians[m], 3) if medians[m] else 1.0 for m in METRICS}
            slow = tuple(m for m in METRICS if len(nodes) >= min_group and factors[m] < 1 - threshold)
            out.append(NodeBench(node, group, factors, slow))
    return out


def drains(verdicts: list[NodeBench], threshold: float) -> Decision:
    """Drain every slow node, its reason naming the metric and the factor (tag: ``hetsched: bench``)."""
    acts = tuple(DrainNodes((v.node,), "DRAIN", "bench: degraded, " + ", ".join(
        f"{m} {v.factors[m]:.2f} of {v.group} median (limit {1 - threshold:.2f})" for m in v.slow), Cause.SLOW_NODE)
        for v in verdicts if v.slow)
    return Decision(acts, "bench")


def group_factors(results: Mapping[str, Mapping[str, float]], groups: Mapping[str, str],
                  archs: Mapping[str, str]) -> dict[str, float]:
    """Node group -> measured speed factor: the geometric mean over :data:`METRICS` of (the group's median /
    the median of every benchmarked node of the group's CPU arch). Arch-to-arch differences stay in the workload
    classes' ``speed`` tables (a class's arm factor); this says how a group compares with its arch's other
    nodes (an older generation, a BIOS setting, a bad batch of DIMMs). A group alone in its arch gets 1.0. Pure.
    """
    by_group: dict[str, list[str]] = {}
    for node in results:
        if node in groups:
            by_group.setdefault(groups[node], []).append(node)
    out = {}
    for group, nodes in sorted(by_group.items()):
        peers = [n for n in results if archs.get(groups.get(n, "")) == archs.get(group)]
        ratio = 1.0
        for m in METRICS:
            ref = statistics.median(results[n][m] for n in peers)
            ratio *= statistics.median(results[n][m] for n in nodes) / ref if ref else 1.0
        out[group] = round(ratio ** (1 / len(METRICS)), 3)
    return out


def factor_overlay(results: Mapping[str, Mapping[str, Any]], groups: Mapping[str, str], archs: Mapping[str, str],
                   verdicts: list[NodeBench], provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The site's speed-factor overlay (``site/factors.py`` reads it): group factors, per-node factors for the
    record, and where they came from. Pure."""
    return {"version": 1, "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "provenance": {**provenance, "metrics": list(METRICS), "nodes": len(results),
                           "jobs": sorted({int(r["job"]) for r in results.values() if str(r.get("job", "")).isdigit()}),
                           "rule": "group median / median of the benchmarked nodes of its arch, geometric mean "
                                   "over the metrics"},
            "groups": group_factors(results, groups, archs),
            "nodes": {v.node: dict(v.factors) for v in verdicts}}
