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
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from slurm_plugin.cluster.local import LocalCluster  # noqa: E402
from slurm_plugin.pack.bench import machine  # noqa: E402
from slurm_plugin.cycle.bench_live import cycle_once, measure_reads  # noqa: E402

POLICY = {"ranking": {"name": "dqn"}, "packing": {"enabled": True}, "scaling": {"name": "planner"}}
SHAPES = (("-c", "1", "--comment=class=batch"), ("-c", "2", "--comment=class=web"),
          ("-c", "4", "--constraint=aarch64|x86_64", "--comment=class=web"), ("-c", "1", "-p", "batch"),
          ("-c", "2", "--gres=gpu:1", "-p", "gpu"))


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
        out["snapshot_reads"] = measure_reads(client)["reads"]
        env = {**os.environ, "SLURM_CONF": str(cluster.conf), "PYTHONPATH": str(REPO)}
        out["cycles"] = [cycle_once(client, env, site_file, policy_file, root / "cycle", 30.0) for _ in range(2)]
    finally:
        Path(args.output).write_text(json.dumps(out, indent=1) + "\n")  # what was measured, also on failure
        cluster.down()  # stops slurmctld and every slurmd by pid; the next up cold-starts (no jobs kept)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
