"""One whole cycle on a real local Slurm cluster with a large pending queue (issue 23: the live measurement).

Brings up the demo site (10 nodes, real slurmctld and slurmd) under ROOT with MaxJobCount raised, fills every node
with one long job, submits PENDING small jobs of mixed shapes (CPU jobs of two classes, a third of them with an
architecture OR-constraint the packing may move, some untyped-GPU jobs) so they wait for resources, then measures:

- the snapshot reads the daemon and the cycle make, each timed and counted by slurmctld itself (``sdiag`` RPC
  statistics by message type, reset before each read);
- one ``hetsched cycle once`` (the default policy of ``bench cycle``: DQN ranking, packing, the power planner) as a
  separate process, its CPU time, wall time, the step times it logs, the actions it applied, and the RPCs it cost.

Usage: python3 results/cycle/live_bench.py [--pending N] [--root DIR] [--port P] [--output F]
The cluster is stopped (by pid, ``cluster down``) at the end, also on failure; its state directory is removed
first, so each run starts with no cycle memory and slurmctld with no earlier job files.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from slurm_plugin.cluster.local import LocalCluster  # noqa: E402
from slurm_plugin.pack.bench import machine  # noqa: E402
from slurm_plugin.slurm.sdiag import rpc_stats  # noqa: E402
from slurm_plugin.snapshot.collect import JobsCache, collect_snapshot  # noqa: E402

POLICY = {"ranking": {"name": "dqn"}, "packing": {"enabled": True}, "scaling": {"name": "planner"}}
SHAPES = (("-c", "1", "--comment=class=batch"), ("-c", "2", "--comment=class=web"),
          ("-c", "4", "--constraint=aarch64|x86_64", "--comment=class=web"), ("-c", "1", "-p", "batch"),
          ("-c", "2", "--gres=gpu:1", "-p", "gpu"))


def _rpcs(client) -> dict:
    by_type, _ = rpc_stats(client.run("sdiag").stdout)
    return {k: {"count": v.count, "total_time_us": v.total_time_us} for k, v in by_type.items()
            if k != "REQUEST_STATS_INFO"}


def _reset(client) -> None:
    client.run("sdiag", "--reset")


def _submit(client, count: int) -> list[int]:
    def one(i: int) -> int:
        return client.sbatch("-t", "30", "-o", "/dev/null", *SHAPES[i % len(SHAPES)], wrap="true")

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(one, range(count)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pending", type=int, default=20000)
    ap.add_argument("--root", default="/var/lib/hetsched/bench-live")
    ap.add_argument("--port", type=int, default=15000, help="slurmctld's port; the slurmds take the next 10")
    ap.add_argument("--output", default=str(REPO / "results/cycle/live-bench.json"))
    args = ap.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((REPO / "site_configs/demo.yaml").read_text())
    data["slurm"].update(cluster_name="hs-bench-live", slurmctld_port=args.port, slurmd_port=args.port + 1,
                         max_job_count=args.pending + 10000)
    site_file = root / "site.yaml"
    site_file.write_text(yaml.safe_dump(data, sort_keys=False))
    policy_file = root / "policy.json"
    policy_file.write_text(json.dumps(POLICY))
    cluster = LocalCluster(root)
    cluster.down()
    for old in ("cycle", "spool"):  # no cycle memory, and no earlier run's job files for slurmctld to purge
        shutil.rmtree(root / old, ignore_errors=True)
    out: dict = {"pending": args.pending, "policy": POLICY, "machine": machine()}
    try:
        cluster.up(site_file)
        client = cluster.client()
        out["slurm_version"] = str(client.version)
        nodes = [n["NodeName"] for n in client.show_nodes()]
        parts = ",".join(p["name"] for p in data["partitions"])
        for n in nodes:  # one long job per node, so the queue waits for resources
            client.sbatch("-p", parts, "-w", n, "--exclusive", "-t", "120", "-o", "/dev/null",
                          wrap="sleep 7200")
        t0 = time.perf_counter()
        _submit(client, args.pending)
        out["submit_s"] = round(time.perf_counter() - t0, 1)
        time.sleep(5)  # let the main scheduler and backfill pass over the new queue once
        reads = {}
        for name, cache in (("nodes+partitions (daemon, between queue reads)", JobsCache(3600)),
                            ("nodes+partitions+queue (cycle; daemon every jobs_refresh_s)", None)):
            if cache is not None:
                collect_snapshot(client, cache=cache)  # the cached queue read, not measured
            _reset(client)
            c0, w0 = time.process_time(), time.perf_counter()
            snap = collect_snapshot(client, cache=cache)
            reads[name] = {"wall_s": round(time.perf_counter() - w0, 3), "cpu_s": round(time.process_time() - c0, 3),
                           "jobs": len(snap.jobs), "rpcs": _rpcs(client)}
        out["snapshot_reads"] = reads
        env = {**os.environ, "SLURM_CONF": str(cluster.conf), "PYTHONPATH": str(REPO)}
        out["cycles"] = [_cycle_once(client, env, site_file, policy_file, root / "cycle") for _ in range(2)]
    finally:
        Path(args.output).write_text(json.dumps(out, indent=1) + "\n")  # what was measured, also on failure
        cluster.down()  # stops slurmctld and every slurmd by pid; the next up cold-starts (no jobs kept)
    print(json.dumps(out, indent=1))
    return 0


def _cycle_once(client, env: dict, site_file: Path, policy_file: Path, state_dir: Path) -> dict:
    """One ``hetsched cycle once`` process: wall and CPU time, its steps (from the journal), actions, RPCs."""
    _reset(client)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "slurm_plugin", "-v", "cycle", "once", "--site", str(site_file),
                           "--state-dir", str(state_dir), "--policy-file", str(policy_file), "--json"],
                          env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    logged = re.search(r"cycle: (\d+) action\(s\) \(.*?\) in ([\d.]+) s \(steps: (.*?)\)\n", proc.stderr)
    steps = {name: float(took.split()[0]) for name, took in
             (part.split(" ", 1) for part in logged[3].split(", "))} if logged else None
    return {"exit": proc.returncode, "wall_s": round(wall, 2),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
            "cycle_s": float(logged[2]) if logged else None, "actions": int(logged[1]) if logged else None,
            "steps_s": steps, "rpcs": _rpcs(client),
            "statuses": _statuses(json.loads(proc.stdout) if proc.stdout.strip() else None),
            "stderr_tail": proc.stderr[-600:] if proc.returncode else ""}


def _statuses(results) -> dict:
    rows = results.get("actions", results) if isinstance(results, dict) else (results or [])
    counts: dict[str, int] = {}
    for r in rows if isinstance(rows, list) else []:
        key = f"{r.get('kind')}:{r.get('status')}"
        counts[key] = counts.get(key, 0) + 1
    return counts


if __name__ == "__main__":
    raise SystemExit(main())
