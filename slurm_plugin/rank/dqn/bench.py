"""A synthetic snapshot of many pending jobs on the demo site's nodes, and the live ranker's time on it."""

from __future__ import annotations

import time

import numpy as np

from ...snapshot.gres import GresCount
from ...snapshot.model import JobState, NodeState, Snapshot
from .live import rank_pending
from .model import DEFAULT_MODEL, load_model


def fake_snapshot(jobs: int, seed: int = 0, now: float = 1.7e9) -> Snapshot:
    """``jobs`` pending jobs (mixed sizes, limits, waits, arch/GPU asks) on 10 heterogeneous nodes."""
    rng = np.random.default_rng(seed)
    nodes = tuple(NodeState(f"n{i}", "idle", cpus=c, features=(a,), gres=g) for i, (c, a, g) in enumerate(
        [(16, "x86_64", ())] * 2 + [(64, "aarch64", ())] * 3 + [(64, "riscv64", ()),
         (32, "x86_64", (GresCount("gpu", "a100", 4),)), (72, "aarch64", (GresCount("gpu", "h100", 4),))]))
    feats = ["", "x86_64", "aarch64", "x86_64|aarch64"]
    pend = tuple(JobState(int(i + 1), "PENDING", cpus=int(2 ** rng.integers(0, 7)),
                          time_limit_min=int(rng.integers(1, 2880)), submit_time=int(now - rng.integers(0, 2 * 86400)),
                          features=feats[int(rng.integers(0, 4))], qos=("gold", "silver", "bronze")[i % 3],
                          gres=(GresCount("gpu", "a100", 1),) if i % 10 == 0 else ())
                 for i in range(jobs))
    return Snapshot(nodes=nodes, jobs=pend, taken_at=now)


def bench_rank(jobs: int = 10_000, repeat: int = 7, model_path=None) -> dict:
    """Median wall time (ms) of :func:`rank_pending` on :func:`fake_snapshot` (a new snapshot per run, so no
    per-snapshot cache is reused)."""
    model = load_model(model_path or DEFAULT_MODEL)
    times, actions = [], 0
    for r in range(repeat):
        snap = fake_snapshot(jobs, seed=r)
        t0 = time.perf_counter()
        d = rank_pending(snap, model)
        times.append((time.perf_counter() - t0) * 1e3)
        actions = len(d.actions)
    return {"jobs": jobs, "rank_ms": float(np.median(times)), "rank_ms_all": times, "actions": actions,
            "model": str(model_path or DEFAULT_MODEL)}
