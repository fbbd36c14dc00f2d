"""Evaluate rankings on held-out sequences: per-sequence metrics averaged the way RLScheduler reports them
(the mean over sequences of each sequence's average bounded slowdown, threshold 10 s)."""

from __future__ import annotations

import numpy as np

from ..sim.engine import Engine
from ..sim.hooks import RankingPolicy
from ..sim.machine import Machine
from ..sim.metrics import bounded_slowdown
from ..sim.rlsched import SelectThenWait
from ..workload.jobs import JobTable


def run_sequence(machine: Machine, seq: JobTable, policy: RankingPolicy, backfill: bool,
                 semantics: str = "slurm", scored: np.ndarray | None = None) -> dict:
    """One sequence from an empty cluster; returns avg_bsld, avg_wait_s, max_wait_s, utilization (of the whole
    run) and unstarted, over the jobs where ``scored`` is True (default: all)."""
    if semantics == "rlscheduler":
        out = SelectThenWait(machine, seq, policy, backfill=backfill).run()
    elif semantics == "slurm":
        out = Engine(machine, seq, policy, backfill=backfill, bf_max_job_test=10**9).run()
    else:
        raise ValueError(f"unknown semantics '{semantics}' (valid: slurm, rlscheduler)")
    mask = np.ones(len(seq), dtype=bool) if scored is None else scored
    started = ~np.isnan(out.begin) & mask
    wait = (out.begin - seq.submit)[started]
    run = np.minimum(seq.run, seq.limit)[started]
    span = max(float(np.nanmax(out.end)) - float(seq.submit.min()), 1e-9) if started.any() else 1e-9
    return {"avg_bsld": float(bounded_slowdown(wait, run).mean()) if started.any() else float("nan"),
            "avg_wait_s": float(wait.mean()) if started.any() else float("nan"),
            "max_wait_s": float(wait.max()) if started.any() else float("nan"),
            "utilization": float(out.group_core_s.sum() / (machine.cores * span)),
            "unstarted": int((mask & ~started).sum())}


def evaluate(machine: Machine, seqs: list[JobTable], policy: RankingPolicy, backfill: bool,
             semantics: str = "slurm") -> dict:
    """Metrics over ``seqs``: means of the per-sequence averages, max of the max waits, plus per-sequence bsld."""
    return _summary([run_sequence(machine, s, policy, backfill, semantics) for s in seqs])


def _summary(per: list[dict]) -> dict:
    """:func:`evaluate`'s figures from the per-sequence ones."""
    bsld = [p["avg_bsld"] for p in per]
    return {"avg_bsld": float(np.mean(bsld)), "avg_wait_s": float(np.mean([p["avg_wait_s"] for p in per])),
            "max_wait_s": float(np.max([p["max_wait_s"] for p in per])),
            "utilization": float(np.mean([p["utilization"] for p in per])),
            "unstarted": int(sum(p["unstarted"] for p in per)), "per_sequence_bsld": bsld}


BASELINES = ("fcfs", "sjf", "wfp3", "unicep", "f1", "multifactor")


def protocol_sequences(jobs: JobTable, windows: bool, count: int, length: int, part: str, seed: int) -> list[JobTable]:
    """RLScheduler's 10 x 1,024 windows (``windows``: their seeded starts over the whole trace, run time > 0)
    or ``count`` random ``length``-job sequences from split ``part`` ('all' = every job)."""
    from ..sim.rlrepro import window_starts
    from .episodes import sequences, split
    if windows:
        jobs = jobs.take(np.flatnonzero(jobs.run > 0))
        return [jobs.take(np.arange(s, s + length)) for s in window_starts(len(jobs), count, length, seed)]
    pool = jobs if part == "all" else split(jobs, part)
    return sequences(pool, count, length, np.random.default_rng(seed))


def compare_rows(name: str, machine: Machine, seqs: list[JobTable], policies: dict[str, RankingPolicy],
                 semantics: str, backfills=(False, True), on_row=None, jobs: int | None = 1,
                 on_run=None) -> list[dict]:
    """One row per (backfill, policy) in the issue's results keys (+ per-sequence bsld, unstarted). The
    (backfill, policy, sequence) runs go to ``jobs`` processes (None: every core) with one progress bar over
    them all; ``on_run(backfill, policy, sequence index, figures)`` hears of each as it finishes. Rows are the
    serial ones whatever the number of processes (each run starts from an empty cluster)."""
    from ..sim.parallel import run_all
    tasks = [(bf, pol, i) for bf in backfills for pol in policies for i in range(len(seqs))]
    done = (lambda k, res: on_run(*tasks[k], res)) if on_run else None
    per = run_all(_sequence_run, (machine, seqs, policies, semantics), tasks, jobs, desc=name, on_result=done)
    rows = []
    for k in range(0, len(tasks), max(len(seqs), 1)):
        bf, pol, _ = tasks[k]
        rows.append({"workload": name, "backfill": bf, "policy": pol, **_summary(per[k:k + len(seqs)])})
        if on_row:
            on_row(rows[-1])
    return rows


def _sequence_run(shared: tuple, task: tuple) -> dict:
    """One (backfill, policy, sequence) run of :func:`compare_rows` (in a worker process)."""
    machine, seqs, policies, semantics = shared
    bf, pol, i = task
    return run_sequence(machine, seqs[i], policies[pol], bf, semantics)
