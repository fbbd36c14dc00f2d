"""Rankings on a workload's held-back part, whole: the protocol of issue 13 for the learned ranking.

Per workload, :func:`~slurm_plugin.tune.split.split_history` cuts the jobs 70 / 30 by submit time. The
held-back 30 % is simulated as one run (Slurm-like semantics, EASY backfill on or off), preceded by the
``warmup`` tuning jobs just before the cut so the machine is not empty when the held-back period begins;
only the held-back jobs are scored (avg bounded slowdown, threshold 10 s; waits). Nothing of the held-back
part may have been trained on: the training mix uses ``SPEC@tune`` for these traces and other Lublin seeds.
"""

from __future__ import annotations

import numpy as np

from ..sim.hooks import RankingPolicy
from ..sim.machine import Machine
from ..tune.split import split_history
from ..workload.jobs import JobTable
from .evaluate import run_sequence


def held_back_run(jobs: JobTable, warmup: int, max_test_jobs: int | None = None) -> tuple[JobTable, np.ndarray]:
    """(the jobs to simulate: ``warmup`` tuning jobs + the held-back part, submits rebased to 0; the mask of the
    held-back ones). ``max_test_jobs`` keeps only the first that many held-back jobs."""
    cut = split_history(jobs).boundary
    end = len(jobs) if max_test_jobs is None else min(len(jobs), cut + max_test_jobs)
    lo = max(0, cut - warmup)
    sub = jobs.take(np.arange(lo, end))
    sub.submit = sub.submit - sub.submit[0]
    scored = np.zeros(len(sub), dtype=bool)
    scored[cut - lo:] = True
    return sub, scored


def held_back_rows(name: str, machine: Machine, jobs: JobTable, policies: dict[str, RankingPolicy],
                   backfills=(True, False), warmup: int = 1000, max_test_jobs: int | None = None,
                   on_row=None) -> list[dict]:
    """One row per (backfill, policy): workload, policy, backfill, avg_bsld, avg_wait_s, max_wait_s,
    utilization, unstarted, test_jobs, warmup_jobs."""
    sub, scored = held_back_run(jobs, warmup, max_test_jobs)
    rows = []
    for bf in backfills:
        for pol, rank in policies.items():
            m = run_sequence(machine, sub, rank, bf, scored=scored)
            rows.append({"workload": name, "policy": pol, "backfill": bf, **m, "test_jobs": int(scored.sum()),
                         "warmup_jobs": int((~scored).sum())})
            if on_row:
                on_row(rows[-1])
    return rows


def versus_best(rows: list[dict], learned: str, heuristics: tuple[str, ...]) -> list[dict]:
    """Per (workload, backfill): ``learned``'s bsld, the best heuristic's and their ratio (> 1: the learned
    ranking is worse)."""
    out = []
    for key in dict.fromkeys((r["workload"], r["backfill"]) for r in rows):
        cell = {r["policy"]: r for r in rows if (r["workload"], r["backfill"]) == key}
        if learned not in cell:
            continue
        best = min((cell[h] for h in heuristics if h in cell), key=lambda r: r["avg_bsld"])
        out.append({"workload": key[0], "backfill": key[1], "policy": learned,
                    "avg_bsld": cell[learned]["avg_bsld"], "best_heuristic": best["policy"],
                    "best_avg_bsld": best["avg_bsld"], "ratio": cell[learned]["avg_bsld"] / best["avg_bsld"]})
    return out
