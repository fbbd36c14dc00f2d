"""Benchmark runs of :func:`~slurm_plugin.pack.pack` on generated instances, as JSON-ready rows."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from .generate import generate
from .highs_direct import lp_bound
from .options import build_options
from .rows import build_rows
from .solve import pack
from .solver import MilpSolver

FULL_SIZES: tuple[tuple[int, int], ...] = ((100, 10), (500, 10), (1000, 20), (2000, 20), (5000, 30), (10000, 50))
QUICK_SIZES: tuple[tuple[int, int], ...] = ((100, 10), (2000, 20))
# (jobs, classes) -> (max build+solve seconds, max gap) from issue 6.
TARGETS: dict[tuple[int, int], tuple[float, float | None]] = {(2000, 20): (1.0, 0.01), (10000, 50): (5.0, None)}


@dataclass(frozen=True)
class Case:
    jobs: int
    classes: int
    seed: int


def run_case(case: Case, make_solver: Callable[[], MilpSolver], repeat: int = 1) -> dict:
    """Pack one generated instance ``repeat`` times; timings are medians, the rest from the last run."""
    inst = generate(case.jobs, case.classes, seed=case.seed)
    runs, walls = [], []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        runs.append(pack(inst.problem, make_solver()))
        walls.append(time.perf_counter() - t0)
    r = runs[-1]
    opts = build_options(inst.problem)
    lp = lp_bound(inst.problem, opts, build_rows(inst.problem, opts))
    row = {
        "jobs": case.jobs, "classes": case.classes, "seed": case.seed, "solver": r.solver,
        "shapes": len(inst.problem.shapes), "options": len(opts), "pools": len(inst.problem.pools),
        "build_s": statistics.median(x.build_s for x in runs), "solve_s": statistics.median(x.solve_s for x in runs),
        "prep_s": statistics.median(x.prep_s for x in runs),
        "model_build_s": statistics.median(x.build_s - x.prep_s for x in runs),
        "total_s": statistics.median(walls), "objective": r.objective, "greedy_objective": r.greedy_objective,
        "bound": r.bound, "gap": r.gap, "lp_bound": lp,
        "gap_to_lp": (lp - r.objective) / max(abs(lp), 1e-9),
        "greedy_gap_to_lp": (lp - r.greedy_objective) / max(abs(lp), 1e-9),
        "status": r.status.value, "detail": r.detail, "started": r.started(), "repeat": len(runs),
    }
    target = TARGETS.get((case.jobs, case.classes))
    if target:
        row["target"] = {"max_build_solve_s": target[0], "max_gap": target[1],
                         "met": _meets(row, *target)}
    return row


def _meets(row: dict, max_s: float, max_gap: float | None) -> bool:
    ok_time = row["build_s"] + row["solve_s"] <= max_s
    ok_gap = max_gap is None or (row["gap"] is not None and row["gap"] <= max_gap)
    return bool(ok_time and ok_gap and row["objective"] >= row["greedy_objective"])


def machine() -> dict:
    """Where the figures were measured: arch, cores, CPU model, versions, git commit."""
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor())
    return {"uname_m": platform.machine(), "nproc": os.cpu_count(), "cpu_model": cpu,
            "python": sys.version.split()[0], "highspy": version("highspy"), "pyomo": version("pyomo"),
            "git_commit": _git("rev-parse", "HEAD"), "git_dirty": bool(_git("status", "--porcelain", "--",
                                                                             "slurm_plugin/pack"))}


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                              cwd=Path(__file__).resolve().parent).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
