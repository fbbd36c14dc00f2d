"""The large live site (issue 23, item 1): large.yaml's 2,240 nodes (or the site grown to --nodes) on one host,
every node powered down at start, 100,000 held pending jobs, then ``hetsched bench cycle --live``.

Writes ROOT/site.yaml (the site with slurmctld on --port, slurmd ports from --port + 1, MaxJobCount and
MaxArraySize raised), brings it up with ``cluster up --powered-down --port-span 100 --bootable <one node>`` (no
slurmd runs until the resume program starts that one), fills the queue (``--fill``: arrays split into records),
measures and writes --output; the cluster is stopped (by pid, ``cluster down``) at the end, also on failure,
unless --keep.

Usage: python3 results/cycle/large_live.py [--nodes N] [--pending M] [--unheld] [--root DIR] [--port P] [--output F]
       [--keep] [--policy-file F]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from slurm_plugin.cluster.local import LocalCluster  # noqa: E402
from slurm_plugin.site import load_site  # noqa: E402
from slurm_plugin.snapshot.synthetic import scaled_site  # noqa: E402


def site_data(nodes: int | None, port: int, pending: int, max_jobs: int | None = None) -> dict:
    data = yaml.safe_load((REPO / "site_configs/large.yaml").read_text())
    if nodes:  # grow each group as `bench cycle --nodes` does
        grown = scaled_site(load_site(REPO / "site_configs/large.yaml"), nodes)
        counts = {g.name: g.count for g in grown.node_groups}
        for cluster in data["clusters"]:
            for group in cluster["node_groups"]:
                group["count"] = counts[group["name"]]
                group["digits"] = max(group.get("digits", 3), len(str(group["count"])))
    data["slurm"].update(cluster_name="hs-large-live", slurmctld_port=port, slurmd_port=port + 1,
                         max_job_count=max_jobs or pending + 20000, max_array_size=10001)
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=None, help="grow large.yaml to about N nodes (default: 2,240)")
    ap.add_argument("--pending", type=int, default=100000)
    ap.add_argument("--root", default="/var/lib/hetsched/bench-scale")
    ap.add_argument("--port", type=int, default=30000, help="slurmctld's port; the slurmds share the next 100")
    ap.add_argument("--cycles", type=int, default=2)
    ap.add_argument("--max-jobs", type=int, default=None, help="MaxJobCount (default: --pending + 20,000; more to "
                    "top the queue up later with `bench cycle --live --fill`)")
    ap.add_argument("--unheld", action="store_true", help="jobs not held, in partitions set DOWN (bench --unheld)")
    ap.add_argument("--output", default=str(REPO / "results/cycle/live-large.json"))
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    ap.add_argument("--policy-file", default=None, help="the cycle's policy (bench cycle's default: DQN, packing, "
                    "planner); e.g. with a budget: section")
    args = ap.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    site_file = root / "site.yaml"
    site_file.write_text(yaml.safe_dump(site_data(args.nodes, args.port, args.pending, args.max_jobs), sort_keys=False))
    cluster = LocalCluster(root)
    cluster.down()
    shutil.rmtree(root / "spool", ignore_errors=True)  # no earlier run's jobs for slurmctld to purge
    hetsched = [sys.executable, "-m", "slurm_plugin"]
    first = next(iter(load_site(site_file).node_groups)).hostnames[0]
    try:
        t0 = time.perf_counter()
        subprocess.run([*hetsched, "cluster", "up", str(site_file), "--root", str(root), "--powered-down",
                        "--port-span", "100", "--bootable", first, "--wait", "600"], check=True)
        print(f"up in {time.perf_counter() - t0:.1f} s", flush=True)
        return subprocess.run([*hetsched, "bench", "cycle", "--live", "--root", str(root), "--fill",
                               str(args.pending), *(["--unheld"] if args.unheld else []), "--cycles", str(args.cycles),
                               *(["--policy-file", args.policy_file] if args.policy_file else []),
                               "--output", args.output]).returncode
    finally:
        if not args.keep:
            cluster.down()


if __name__ == "__main__":
    raise SystemExit(main())
