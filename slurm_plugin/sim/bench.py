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


# ``hetsched bench sim``: the engine per (workload, policy, backfill), and the reference EASY loop beside it
TRACES = ("lublin_256.swf", "KTH-SP2-1996-2.1-cln.swf.gz", "LANL-CM5-1994-4.1-cln.swf.gz")


def _timed(fn):
    """(result, wall s, CPU s of this thread) of ``fn()``."""
    import time
    w, c = time.perf_counter(), time.thread_time()
    out = fn()
    return out, time.perf_counter() - w, time.thread_time() - c


def bench_sim(workloads: list[str | tuple[str, str]], policies: list[str], backfills: list[bool], site: str | None = None,
              power: str = "always-on", repeat: int = 1, reference: bool = False, log=None) -> list[dict]:
    """One row per (workload, policy, backfill): the fastest of ``repeat`` engine runs (simulation only, the
    trace already read). With ``reference``, FCFS+EASY rows on a homogeneous machine also run
    :func:`.reference.easy_fcfs` (whole queue scanned) right after each engine run, so both see the same load,
    and record its times, the ratio and whether every job starts at the same time (else how many differ).
    A workload given as ``(site, spec)`` runs on that site instead of ``site``."""
    from .reference import easy_fcfs
    from .run import prepare, simulate
    rows = []
    for spec in workloads:
        p = prepare(spec[1], spec[0]) if isinstance(spec, tuple) else prepare(spec, site)
        jobs = p.workload.jobs
        for bf in backfills:
            for pol in policies:
                runs, refs = [], []
                for _ in range(repeat):
                    (row, out), wall, cpu = _timed(lambda: simulate(p, pol, backfill=bf, power=power))
                    runs.append((out.wall_s, cpu))
                    if reference and pol == "fcfs" and bf and len(p.machine.groups) == 1 and power == "always-on":
                        ref, rwall, rcpu = _timed(lambda: easy_fcfs(p.machine.nodes, jobs.submit, jobs.run,
                                                                    jobs.limit, jobs.nodes))
                        refs.append((rwall, rcpu, ref))
                sim_s, cpu_s = min(r[0] for r in runs), min(r[1] for r in runs)
                r = {"workload": p.workload.name, "site": p.site.name if p.site else None, "policy": pol,
                     "backfill": bf, "power": power, "jobs": len(jobs), "sim_s": sim_s, "cpu_s": cpu_s,
                     "jobs_per_s": len(jobs) / max(sim_s, 1e-9), "jobs_per_cpu_s": len(jobs) / max(cpu_s, 1e-9),
                     "repeat": repeat}
                if refs:
                    ref = refs[-1][2]
                    differ = int((~((ref.begin == out.begin) | (np.isnan(ref.begin) & np.isnan(out.begin)))).sum())
                    rs, rc = min(x[0] for x in refs), min(x[1] for x in refs)
                    r["reference"] = {"sim_s": rs, "cpu_s": rc, "jobs_per_s": len(jobs) / max(rs, 1e-9),
                                      "same_schedule": differ == 0, "jobs_differ": differ,
                                      "engine_speedup_wall": rs / max(sim_s, 1e-9),
                                      "engine_speedup_cpu": rc / max(cpu_s, 1e-9)}
                rows.append(r)
                if log:
                    log(r)
    return rows


def default_traces(root: Path = LUBLIN.parent) -> list[str]:
    """The shared SWF traces present (Lublin-1, KTH-SP2, LANL-CM5)."""
    return [str(root / t) for t in TRACES if (root / t).exists()]
