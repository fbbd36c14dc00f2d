"""Run the simulator on (site, workload, policy) and produce result rows in the issue's results format:
``{"workload", "policy", "backfill", "semantics", "jobs", "unstarted", "metrics": {...}, "wall_s", ...}``."""

from __future__ import annotations

import logging
import platform
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..site import Site, load_site
from ..workload import UnfitJobsError, Workload, WorkloadError, load_workload, unfit_jobs
from .engine import Engine, Outcome
from .hooks import packing as packing_policy
from .hooks import RankingPolicy, ScalingPolicy, ranking, scaling
from .machine import Machine, homogeneous, machine_from_site
from .metrics import compute_metrics
from .rlsched import SelectThenWait

log = logging.getLogger(__name__)
SEMANTICS = ("slurm", "rlscheduler")


@dataclass
class Prepared:
    """A workload fitted to a machine (unfit jobs dropped only when asked, and then listed)."""

    site: Site | None
    machine: Machine
    workload: Workload


def prepare(workload: str, site: str | None = None, drop_unfit: bool = False, compress: float = 1.0) -> Prepared:
    """Load the site (or the machine the workload names: an SWF header, an OpenB node list) and the workload;
    check every job fits. ``compress`` > 1 divides every submit time by it (run times unchanged): the offered
    load grows by that factor, for traces that barely load their machine (recorded as ``compress`` in rows)."""
    if compress <= 0:
        raise ValueError(f"--compress must be > 0 (got {compress:g})")
    s = load_site(site) if site else None
    w = load_workload(workload, s)
    if compress != 1.0:
        w.jobs = replace(w.jobs, submit=w.jobs.submit / compress)
        w.compress = compress
    if s is None and w.site is not None:
        s = w.site
    if s is not None:
        machine = machine_from_site(s)
    elif w.machine is not None:
        machine = homogeneous(*w.machine, name=w.name)
    elif workload.lower().endswith((".swf", ".swf.gz")):
        nodes = int(w.jobs.nodes.max())
        log.warning("%s: no MaxNodes/MaxProcs header; assuming %d one-core nodes (the largest job)", workload, nodes)
        machine = homogeneous(nodes, int(w.jobs.cores.max()), name=f"{w.name} (inferred)")
    else:
        raise WorkloadError(workload, "this workload names no machine: give --site")
    unfit = unfit_jobs(w.jobs, machine)
    if unfit:
        listed = [(int(w.jobs.id[i]), why) for i, why in unfit]
        if not drop_unfit:
            raise UnfitJobsError(workload, listed)
        keep = np.setdiff1d(np.arange(len(w.jobs)), [i for i, _ in unfit])
        w.jobs = w.jobs.take(keep)
        w.dropped = listed
        log.warning("%s: dropped %d job(s) that need more than %s has", workload, len(listed), machine.name)
    return Prepared(s, machine, w)


def simulate(p: Prepared, policy: str | RankingPolicy, backfill: bool = True, semantics: str = "slurm",
             power: str | ScalingPolicy = "always-on", suspend_time_s: float = 600.0, progress=None,
             packing: str | None = None, packing_kw: dict | None = None, sla: bool = False) -> tuple[dict, Outcome]:
    """One run; returns (result row, outcome). ``policy`` and ``power`` are names in the hooks' registries or
    built hooks (:mod:`.policy` builds them from a policy spec). ``packing`` (a name in ``hooks.PACKINGS``, "off"
    included, with ``packing_kw``) also turns on the site's speed factors, so runs with packing on and off
    compare the same physics; None: neither. ``sla``: metrics also get ``sla`` (per QoS tier, the share of jobs
    started within its ``max_wait``: :func:`slurm_plugin.sim.sla.sla_metrics`; needs a site)."""
    if packing is not None and semantics != "slurm":
        raise ValueError(f"packing runs only under --semantics slurm (got {semantics})")
    extra: dict = {}
    t0 = time.perf_counter()
    rank = ranking(policy, p.site, float(p.machine.cores)) if isinstance(policy, str) else policy
    if semantics == "slurm":
        scale = power if not isinstance(power, str) else scaling(
            power, **({"suspend_time_s": suspend_time_s} if power == "idle-suspend" else {}))
        if packing is not None:
            from .packing import speed_matrix
            extra = dict(packing=packing_policy(packing, p.site, p.machine, p.workload.jobs, **(packing_kw or {})),
                         speed=speed_matrix(p.site, p.machine, p.workload.jobs))
        engine = Engine(p.machine, p.workload.jobs, rank, backfill=backfill, scaling=scale, **extra)
        out = engine.run(progress)
    elif semantics == "rlscheduler":
        out = SelectThenWait(p.machine, p.workload.jobs, rank, backfill=backfill).run()
    else:
        raise ValueError(f"unknown semantics '{semantics}' (valid: {', '.join(SEMANTICS)})")
    metrics = compute_metrics(p.workload.jobs, out, p.machine)
    if sla and p.site is not None:
        from .sla import sla_metrics
        metrics["sla"] = sla_metrics(p.workload.jobs, out, p.site)
    row = {
        "workload": p.workload.name, "site": p.site.name if p.site else None, "machine": p.machine.name,
        "nodes": p.machine.nodes, "cores": p.machine.cores, "policy": _name(policy), "backfill": backfill,
        "semantics": semantics, "power": _name(power), "compress": p.workload.compress, "jobs": len(p.workload.jobs),
        "unstarted": int(np.isnan(out.begin).sum()), "timeouts": out.timeouts, "skipped": p.workload.skipped,
        "dropped_unfit": len(p.workload.dropped), "adjusted": p.workload.adjusted, "metrics": metrics,
        "events": out.events,
        "wall_s": time.perf_counter() - t0, "sim_wall_s": out.wall_s, "packing": packing,
        "jobs_per_s": len(p.workload.jobs) / max(out.wall_s, 1e-9),
    }
    if packing is not None:
        row["speed_timeouts"] = engine.speed_timeouts
        row["pack_stats"] = extra["packing"].stats.as_dict() if extra["packing"] is not None else None
    return row, out


def _name(hook) -> str:
    """A hook's name (a name given as such stays as it was)."""
    return hook if isinstance(hook, str) else hook.name


def provenance() -> dict:
    """The machine and commit the figures were measured on."""
    cpu = ""
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), "")
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent, timeout=5).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        commit = ""
    import os
    return {"uname_m": platform.machine(), "nproc": os.cpu_count(), "cpu_model": cpu, "git_commit": commit,
            "python": platform.python_version()}
