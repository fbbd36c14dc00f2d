"""Reason strings: why an assignment went to its node class."""

from __future__ import annotations

import numpy as np

from .model import BOOT, TIERS, PackingProblem
from .options import Options, job_cost, job_value


def reasons(problem: PackingProblem, opts: Options, used: list[int], y: np.ndarray) -> list[str]:
    """The :func:`reason` of every option index in ``used``."""
    by_shape: dict[int, list[int]] = {}
    for j, s in enumerate(opts.shape.tolist()):
        by_shape.setdefault(s, []).append(j)
    return [reason(problem, opts, j, y, by_shape[int(opts.shape[j])]) for j in used]


def reason(problem: PackingProblem, opts: Options, j: int, y: np.ndarray, siblings: list[int]) -> str:
    """One line for option ``j`` (``siblings``: all options of its shape): the class, speed, value and cost per
    job, and how it compares with the shape's other options.

    e.g. ``band 7 ai-training -> gpu/gpu-h100 now: speed 2.00x, value 256.00 - cost 4.40 = net 251.60/job;
    best of 3 options (next: gpu/gpu-a100 now, net 125.80)``"""
    s, k, p, tier = int(opts.shape[j]), int(opts.klass[j]), int(opts.pool[j]), TIERS[int(opts.tier[j])]
    shape, klass, pool = problem.shapes[s], problem.classes[k], problem.pools[p]
    value = job_value(shape, klass, tier, pool, problem)
    cost = job_cost(shape, klass, pool, problem)
    text = (f"band {shape.band} {shape.workload} -> {klass.name} {tier}: speed {klass.speed_for(shape.workload):.2f}x,"
            f" value {value:.2f} - cost {cost:.2f} = net {opts.net[j]:.2f}/job")
    if tier == BOOT:
        text += f"; boots {int(y[p])} node(s) of {pool.name} ({pool.boot_time_s:g} s)"
    others = [i for i in siblings if i != j]
    if not others:
        return text + "; only option"
    better = [i for i in others if opts.net[i] > opts.net[j] + 1e-9]
    if better:
        names = ", ".join(_label(problem, opts, i) for i in better[:3])
        return text + f"; better-paying {names} full or taken by more valuable jobs"
    nxt = max(others, key=lambda i: opts.net[i])
    return text + f"; best of {len(others) + 1} options (next: {_label(problem, opts, nxt)}, net {opts.net[nxt]:.2f})"


def _label(problem: PackingProblem, opts: Options, i: int) -> str:
    return f"{problem.classes[int(opts.klass[i])].name} {TIERS[int(opts.tier[i])]}"
