"""Speed figures: FCFS + EASY jobs/s as the queue grows (Lublin-1 arrivals compressed) and as the node count
grows (Lublin-1 with node counts and job sizes scaled together). Uses the shared trace when present."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..workload import read_swf
from .engine import Engine
from .hooks import ranking
from .machine import homogeneous

LUBLIN = Path(__file__).resolve().parents[3] / "shared" / "workloads" / "swf" / "lublin_256.swf"


def _run(scenario: str, nodes: int, jobs) -> dict:
    out = Engine(homogeneous(nodes, 1), jobs, ranking("fcfs"), backfill=True).run()
    tl = out.timeline
    dt = np.diff(np.asarray(tl["t"]))
    mean_queue = float(np.sum(np.asarray(tl["queue"][:-1]) * dt) / max(dt.sum(), 1e-9))
    return {"scenario": scenario, "nodes": nodes, "jobs": len(jobs), "mean_queue": mean_queue,
            "events": out.events, "wall_s": out.wall_s, "jobs_per_s": len(jobs) / out.wall_s}


def speed_scaling(trace: Path = LUBLIN, quick: bool = False) -> list[dict]:
    w = read_swf(trace)
    jobs = w.jobs.take(np.arange(2000 if quick else len(w.jobs)))
    rows = []
    for factor in (1.0, 1.5, 2.0) if not quick else (1.0, 2.0):
        compressed = replace(jobs, submit=jobs.submit / factor)
        rows.append(_run(f"arrivals x{factor:g}", w.machine[0], compressed))
    for scale in (1, 4, 16) if not quick else (1, 4):
        scaled = replace(jobs, nodes=jobs.nodes * scale)
        rows.append(_run(f"nodes x{scale}", w.machine[0] * scale, scaled))
    return rows
