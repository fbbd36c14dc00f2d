"""``hetsched bench cycle``: the cost of one cycle's pure part at site scale (issue 23, item 4).

For each (format, nodes, pending) point: synthetic Slurm outputs of the site grown to ``nodes``
(:mod:`slurm_plugin.snapshot.synthetic`), parsed into a snapshot (step ``parse``: the real parsers), then every
step of the policy's cycle timed on its own (``rank``, ``pack``, ``reshape``, ``power``, ...) and the whole
``decide`` (the steps plus the one-power-action guard). Times are CPU seconds of this process
(``process_time``, HiGHS's threads included: what the step costs, whatever else the machine runs), the fastest
of ``repeat`` runs, with the wall time of the same run beside it. The packing step's solver stops at its
wall-clock cap, so on a loaded machine it may return its greedy start sooner than on an idle one. :func:`exponents` fits each step's growth with the pending queue (log-log slope).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable

from ..policy import PolicySpec
from ..policy.capacity import group_sizes
from ..snapshot.collect import build_snapshot
from ..snapshot.synthetic import scaled_site, synthetic_docs
from .decide import one_power_action_per_node
from .policy import policy_steps
from .steps import CycleMemory, StepInputs

NOW = 1_800_000_000


def _timed(fn: Callable[[], object], repeat: int) -> tuple[object, float, float]:
    """(result of the fastest run, its CPU seconds, its wall seconds)."""
    best = (None, math.inf, math.inf)
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        if cpu < best[1]:
            best = (out, cpu, wall)
    return best


def bench_point(site, spec: PolicySpec, nodes: int, pending: int, fmt: str, repeat: int = 3) -> list[dict]:
    """Rows ``{format, nodes, pending, step, seconds, wall_s, actions}`` for one point (see the module docstring)."""
    big = scaled_site(site, nodes)
    docs = synthetic_docs(big, pending, fmt, now=NOW)
    snapshot, cpu, wall = _timed(lambda: build_snapshot(*docs, slurm_version=fmt, taken_at=NOW), repeat)
    base = {"format": fmt, "nodes": big.node_count(), "pending": pending}
    rows = [{**base, "step": "parse", "seconds": cpu, "wall_s": wall, "actions": 0}]
    return rows + time_steps(snapshot, big, spec, NOW, base, repeat)


def time_steps(snapshot, site, spec: PolicySpec, now: float, base: dict, repeat: int = 1) -> list[dict]:
    """Rows ``{**base, step, seconds, wall_s, actions}``: each step of ``spec``'s cycle on ``snapshot`` timed on
    its own, then ``decide`` (the steps plus the one-power-action guard); pure, nothing is applied."""
    rows = []
    steps = policy_steps(spec, groups=group_sizes(site.node_groups))
    total_cpu = total_wall = 0.0
    earlier: list = []
    memory = CycleMemory()
    for step in steps:
        inputs = StepInputs(snapshot, site, now, tuple(earlier))
        (decision, next_memory), cpu, wall = _timed(lambda: step.decide(inputs, memory), repeat)
        earlier.append((step.name, decision))
        memory = next_memory  # each step sees the memory the one before it returned, as in run_steps
        rows.append({**base, "step": step.name, "seconds": cpu, "wall_s": wall, "actions": len(decision.actions)})
        total_cpu, total_wall = total_cpu + cpu, total_wall + wall
    decided = StepInputs(snapshot, site, now, tuple(earlier)).decided()
    guarded, cpu, wall = _timed(lambda: one_power_action_per_node(decided), repeat)
    rows.append({**base, "step": "decide", "seconds": total_cpu + cpu, "wall_s": total_wall + wall,
                 "actions": len(guarded.actions)})
    return rows


def exponents(rows: Iterable[dict]) -> list[dict]:
    """Per (format, nodes, step): the slope of log(seconds) against log(pending) over the points measured
    (1.0 = linear); steps under 1 ms at every point are left out (their slope is timer noise)."""
    import numpy as np

    groups: dict[tuple, list[tuple[int, float]]] = {}
    for r in rows:
        groups.setdefault((r["format"], r["nodes"], r["step"]), []).append((r["pending"], r["seconds"]))
    out = []
    for (fmt, nodes, step), pts in sorted(groups.items()):
        pts = sorted(pts)
        if len(pts) < 2 or max(s for _, s in pts) < 1e-3:
            continue
        x = np.log([p for p, _ in pts])
        y = np.log([max(s, 1e-6) for _, s in pts])
        out.append({"format": fmt, "nodes": nodes, "step": step, "exponent": float(np.polyfit(x, y, 1)[0]),
                    "points": len(pts)})
    return out


def bench_cycle(site, spec: PolicySpec, nodes: list[int], pending: list[int], formats: list[str], repeat: int = 3,
                progress: Callable[[str], None] | None = None) -> dict:
    """Every point of ``formats`` x ``nodes`` x ``pending``; ``{"rows": [...], "exponents": [...]}``."""
    rows = []
    for fmt in formats:
        for n in nodes:
            for p in pending:
                if progress:
                    progress(f"{fmt} {n} nodes {p} pending")
                rows += bench_point(site, spec, n, p, fmt, repeat)
    return {"rows": rows, "exponents": exponents(rows)}
