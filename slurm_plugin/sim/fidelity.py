"""Fidelity against real Slurm: replay tens of short, time-compressed ``sleep`` jobs on a real cluster and in
the simulator (same site, same partition, multifactor priority, EASY backfill); compare start order (Kendall
tau-b) and waits (mean absolute error).

The simulator replays what Slurm saw: each job's real submit time (relative to the first), its real run time
(end - start, including sleep start-up) and its time limit. Slurm's backfill runs every ``bf_interval``
(30 s by default) and plans a reservation for every pending job it tests, so the simulator does the same here
(backfill phase: the first submit; up to 100 reservations) instead of its EASY default.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from scipy.stats import kendalltau

from ..site import Site
from ..slurm import SlurmClient
from ..workload.jobs import JobTable, arch_mask
from .engine import Engine
from .hooks import ranking
from .machine import machine_from_site

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReplayJob:
    offset_s: float  # submit time after the first job
    nodes: int
    cores: int  # per node
    run_s: int  # sleep length
    limit_min: int
    arch: str | None = None  # --constraint


def replay_workload(n: int = 24, seed: int = 7, partition_cores: tuple[int, ...] = (16, 64)) -> list[ReplayJob]:
    """``n`` short jobs that contend for the partition: sizes from a core to whole nodes, a few arch-bound."""
    rng = np.random.default_rng(seed)
    out = []
    t = 0.0
    for _ in range(n):
        t += float(rng.choice([0.0, 2.0, 3.0, 5.0]))
        cores = int(rng.choice([1, 4, 16, 32, 64]))
        arch = "aarch64" if cores > min(partition_cores) else (None if rng.random() < 0.7 else "x86_64")
        out.append(ReplayJob(offset_s=t, nodes=int(rng.choice([1, 1, 1, 2])), cores=cores,
                             run_s=int(rng.integers(2, 7)) * 5, limit_min=int(rng.integers(1, 3)), arch=arch))
    return out


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def replay_on_slurm(client: SlurmClient, jobs: list[ReplayJob], partition: str,
                    timeout_s: float = 600.0) -> list[dict[str, float]]:
    """Submit ``jobs`` at their offsets, wait for all; returns submit/start/end epoch seconds per job."""
    ids = []
    t0 = time.monotonic()
    for j in jobs:
        delay = t0 + j.offset_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        args = ["-p", partition, "-N", str(j.nodes), f"--ntasks-per-node={j.cores}", "-t", str(j.limit_min),
                "--mem-per-cpu=1024", "-o", "/dev/null", "-J", f"fid{len(ids)}"]
        if j.arch:
            args.append(f"--constraint={j.arch}")
        ids.append(client.sbatch(*args, wrap=f"sleep {j.run_s}"))
    out = []
    deadline = time.monotonic() + timeout_s
    for jid in ids:
        rec = client.wait_job(jid, timeout=max(1.0, deadline - time.monotonic()))
        if rec.get("JobState") != "COMPLETED":
            raise RuntimeError(f"replay job {jid} ended {rec.get('JobState')} ({rec.get('Reason')})")
        out.append({"id": jid, "submit": _ts(rec["SubmitTime"]), "start": _ts(rec["StartTime"]),
                    "end": _ts(rec["EndTime"])})
    return out


def simulate_replay(site: Site, partition: str, jobs: list[ReplayJob], real: list[dict[str, float]],
                    policy: str = "multifactor", bf_interval_s: float | None = 30.0,
                    reservations: int = 100) -> np.ndarray:
    """Start times (relative to the first submit) the simulator gives the replayed jobs."""
    t0 = min(r["submit"] for r in real)
    table = JobTable.build(dict(
        id=[r["id"] for r in real], submit=[r["submit"] - t0 for r in real],
        run=[r["end"] - r["start"] for r in real], limit=[j.limit_min * 60.0 for j in jobs],
        nodes=[j.nodes for j in jobs], cores=[j.cores for j in jobs], mem_gb=[float(j.cores) for j in jobs],
        arch_mask=[arch_mask([j.arch] if j.arch else []) for j in jobs]))
    machine = machine_from_site(site, partition)
    total = float(sum(g.count * g.cpu.cores for g in site.node_groups))
    out = Engine(machine, table, ranking(policy, site, total), backfill=True, bf_interval_s=bf_interval_s,
                 reservations=reservations).run()
    by_id = dict(zip(table.id.tolist(), out.begin.tolist()))
    return np.array([by_id[r["id"]] for r in real])


def compare_starts(real: list[dict[str, float]], sim_start: np.ndarray) -> dict:
    """Kendall tau-b of start times and mean absolute error of waits (seconds)."""
    t0 = min(r["submit"] for r in real)
    real_start = np.array([r["start"] - t0 for r in real])
    submit = np.array([r["submit"] - t0 for r in real])
    tau = kendalltau(real_start, sim_start).statistic
    return {"jobs": len(real), "kendall_tau": float(tau),
            "wait_mae_s": float(np.mean(np.abs((real_start - submit) - (sim_start - submit)))),
            "real_avg_wait_s": float(np.mean(real_start - submit)),
            "sim_avg_wait_s": float(np.mean(sim_start - submit)),
            "real_start_s": real_start.tolist(), "sim_start_s": sim_start.tolist()}
