"""``hetsched bench cycle --live``: one whole cycle on a running local cluster, as slurmctld sees it (issue 23).

Against the cluster at ``root`` (e.g. ``site_configs/large.yaml`` brought up with ``cluster up --powered-down``,
its queue filled by :func:`slurm_plugin.cluster.queue_fill.fill_queue`), measures:

- the snapshot reads the daemon and the cycle make (wall, CPU of this process, slurmctld's RPCs from ``sdiag``,
  reset before each read);
- the pure decide on the live snapshot, each step timed on its own (:func:`slurm_plugin.cycle.bench.time_steps`);
- whole ``hetsched cycle once`` runs (snapshot, decide, apply) as separate processes: wall, CPU (the child's
  rusage), the steps it logs, what it applied, and the RPCs slurmctld handled meanwhile. The first run sets
  every job's band; later runs show the steady state (only changes are sent).

slurmctld's RPC cost is reported as its total RPC time over each window, the part of it in the message types
the suite sends (:data:`SUITE_RPCS`), and that time as a share of a cycle interval (what a cycle every
``interval_s`` seconds takes of slurmctld's time). Figures are wall and CPU seconds on whatever machine runs it:
the load average before and after each part is recorded beside them.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from ..slurm.client import TIMEOUT_ENV, SlurmClient
from ..slurm.sdiag import rpc_stats

READ_TIMEOUT_S = 600  # squeue --json of 100,000 jobs takes minutes on a loaded 22.05 host (30 s by default)
# What the suite's snapshot and applier send: job/node/partition reads, job and node updates.
SUITE_RPCS = ("REQUEST_JOB_INFO", "REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO", "REQUEST_UPDATE_JOB",
              "REQUEST_UPDATE_NODE", "REQUEST_UPDATE_PARTITION", "REQUEST_BUILD_INFO", "REQUEST_PING")


def rpcs(client) -> dict:
    """slurmctld's RPC statistics by message type since the last reset (sdiag's own request left out)."""
    by_type, _ = rpc_stats(client.run("sdiag").stdout)
    return {k: {"count": v.count, "total_time_us": v.total_time_us} for k, v in by_type.items()
            if k != "REQUEST_STATS_INFO"}


def rpc_cost(by_type: dict, interval_s: float) -> dict:
    """Totals of :func:`rpcs` output: all RPC time, the suite's message types' part, and that part as a share
    of ``interval_s`` seconds of slurmctld's time."""
    total = sum(v["total_time_us"] for v in by_type.values())
    suite = sum(v["total_time_us"] for k, v in by_type.items() if k in SUITE_RPCS)
    return {"rpc_time_s": round(total / 1e6, 3), "suite_rpc_time_s": round(suite / 1e6, 3),
            "suite_share_of_rpc_time": round(suite / total, 4) if total else None,
            "suite_share_of_interval": round(suite / 1e6 / interval_s, 4)}


def reset(client) -> None:
    client.run("sdiag", "--reset")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def measure_reads(client) -> dict:
    """The daemon's read between queue reads (nodes and partitions) and the cycle's (with the queue)."""
    from ..snapshot.collect import JobsCache, collect_snapshot

    reads = {}
    snap = None
    for name, cache in (("nodes+partitions", JobsCache(3600)), ("nodes+partitions+queue", None)):
        if cache is not None:
            collect_snapshot(client, cache=cache)  # the cached queue read, not measured
        reset(client)
        c0, w0 = time.process_time(), time.perf_counter()
        snap = collect_snapshot(client, cache=cache)
        reads[name] = {"wall_s": round(time.perf_counter() - w0, 3), "cpu_s": round(time.process_time() - c0, 3),
                       "jobs": len(snap.jobs), "rpcs": rpcs(client)}
    return {"reads": reads, "snapshot": snap}


def cycle_once(client, env: dict, site_file: Path, policy_file: Path, state_dir: Path, interval_s: float,
               timeout: float = 3600) -> dict:
    """One ``hetsched cycle once`` process: wall and CPU time, its steps (logged), actions, RPCs."""
    reset(client)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0, w0 = load(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "slurm_plugin", "-v", "cycle", "once", "--site", str(site_file),
                           "--state-dir", str(state_dir), "--policy-file", str(policy_file), "--json"],
                          env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    logged = re.search(r"cycle: (\d+) action\(s\) \(.*?\) in ([\d.]+) s \(steps: (.*?)\)\n", proc.stderr)
    steps = {name: float(took.split()[0]) for name, took in
             (part.split(" ", 1) for part in logged[3].split(", "))} if logged else None
    phases = re.search(r"cycle phases: read ([\d.]+) s, decide ([\d.]+) s, apply ([\d.]+) s", proc.stderr)
    deferred = re.search(r"\((\d+) job update\(s\) deferred to the next cycle\)", proc.stderr)
    by_type = rpcs(client)
    return {"exit": proc.returncode, "wall_s": round(wall, 2),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
            "cycle_s": float(logged[2]) if logged else None, "actions": int(logged[1]) if logged else None,
            "steps_s": steps, "phases_s": dict(zip(("read", "decide", "apply"), map(float, phases.groups())))
            if phases else None, "deferred_jobs": int(deferred[1]) if deferred else 0, "rpcs": by_type,
            "rpc_cost": rpc_cost(by_type, interval_s),
            "statuses": statuses(json.loads(proc.stdout) if proc.stdout.strip() else None),
            "load": [load0, load()], "stderr_tail": proc.stderr[-800:] if proc.returncode else ""}


def statuses(results) -> dict:
    """``{kind:status: count}`` of a ``cycle once --json`` result."""
    rows = results.get("actions", results) if isinstance(results, dict) else (results or [])
    counts: dict[str, int] = {}
    for r in rows if isinstance(rows, list) else []:
        key = f"{r.get('kind')}:{r.get('status')}"
        counts[key] = counts.get(key, 0) + 1
    return counts


def bench_live(cluster, policy: dict, cycles: int = 2, interval_s: float = 30.0, repeat: int = 1,
               say=lambda m: None) -> dict:
    """The measurements of the module docstring on the running ``cluster`` (a LocalCluster); the cycle's memory
    lives in ``<root>/bench-cycle`` (emptied first, so the first cycle starts with none)."""
    import shutil

    from ..policy import policy_from_dict
    from ..site import load_site
    from .bench import time_steps

    state = cluster.state()
    site = load_site(state["site_path"])
    timeout = os.environ.get(TIMEOUT_ENV, str(READ_TIMEOUT_S))
    client = SlurmClient(str(cluster.conf), timeout=float(timeout))
    out: dict = {"slurm_version": str(client.version), "load": {"start": load()}}
    say("snapshot reads")
    read = measure_reads(client)
    snap = read.pop("snapshot")
    pending = sum(1 for j in snap.jobs if j.state == "PENDING")
    out.update(nodes=len(snap.nodes), pending=pending, jobs=len(snap.jobs), snapshot_reads=read["reads"])
    say(f"pure decide on the live snapshot ({len(snap.nodes)} nodes, {pending} pending)")
    spec = policy_from_dict(policy, "bench cycle --live")
    base = {"format": "live", "nodes": len(snap.nodes), "pending": pending}
    out["rows"] = time_steps(snap, site, spec, time.time(), base, repeat)
    out["load"]["after_decide"] = load()
    state_dir = Path(cluster.root) / "bench-cycle"
    shutil.rmtree(state_dir, ignore_errors=True)
    policy_file = Path(cluster.root) / "bench-policy.json"
    policy_file.write_text(json.dumps(policy))
    env = {**os.environ, "SLURM_CONF": str(cluster.conf), TIMEOUT_ENV: timeout}
    runs = []
    for i in range(cycles):
        say(f"cycle once {i + 1}/{cycles}")
        runs.append(cycle_once(client, env, Path(state["site_path"]), policy_file, state_dir, interval_s))
    out["cycles"] = runs
    out["interval_s"] = interval_s
    out["load"]["end"] = load()
    return out
