"""Submit-path cost of the daemon's metrics (issue 17 target: p50 within 5 %), both daemons in one run.

The shim round trip (real job_submit.lua, lua5.1 driver) against two real daemons on one local cluster,
alternating rounds: ``before`` runs the package from BEFORE (a checkout without metrics, on PYTHONPATH),
``after`` this checkout with its metrics endpoint served. Usage (from the repository root):

    git worktree add --detach /tmp/before <commit before metrics>
    PYTHONPATH=$PWD python3 results/submit/metrics_overhead.py /tmp/before ROOT PORT > results/submit/metrics-overhead.json
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import urllib.request
from pathlib import Path

from slurm_plugin.cli.bench_submit import _site_file
from slurm_plugin.cluster.local import LocalCluster
from slurm_plugin.daemon.bench import machine, shim_roundtrip
from slurm_plugin.daemon.process import DaemonProcess

RATE, SECONDS, ROUNDS = 1000.0, 6.0, 3


def main(before: str, root: Path, port: int) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    site = _site_file(root, port)
    cluster = LocalCluster(root)
    cluster.down()
    cluster.up(site, job_submit=False, daemon=False)
    other = root / "before"  # the second daemon's own socket, same site and slurm.conf
    (other / "etc").mkdir(parents=True, exist_ok=True)
    for name in ("site.yaml",):
        (other / name).unlink(missing_ok=True)
        (other / name).symlink_to(root / name)
    (other / "etc" / "slurm.conf").unlink(missing_ok=True)
    (other / "etc" / "slurm.conf").symlink_to(root / "etc" / "slurm.conf")
    mine = os.environ.get("PYTHONPATH", "")
    metrics_url = f"http://127.0.0.1:{port + 50}/metrics"
    daemons = {"before": (DaemonProcess(other, refresh_s=5.0), before),
               "after": (DaemonProcess(root, refresh_s=5.0, metrics_listen=f"127.0.0.1:{port + 50}"), mine)}
    p50: dict[str, list[float]] = {k: [] for k in daemons}
    p99: dict[str, list[float]] = {k: [] for k in daemons}
    try:
        for name, (daemon, path) in daemons.items():
            os.environ["PYTHONPATH"] = path
            daemon.start()
        os.environ["PYTHONPATH"] = mine
        for _ in range(ROUNDS):
            for name, (daemon, _) in daemons.items():
                rt = shim_roundtrip(daemon.socket, RATE, SECONDS)
                p50[name].append(rt["roundtrip_us"]["p50"])
                p99[name].append(rt["roundtrip_us"]["p99"])
        with urllib.request.urlopen(metrics_url, timeout=5) as reply:
            counted = [ln for ln in reply.read().decode().splitlines()
                       if ln.startswith("hetsched_admission_requests_total")]
    finally:
        for daemon, _ in daemons.values():
            daemon.stop()
        cluster.down()
    med = {k: statistics.median(v) for k, v in p50.items()}
    return {"rate_per_s": RATE, "seconds_per_round": SECONDS, "rounds": ROUNDS, "p50_us": p50, "p99_us": p99,
            "median_p50_us": med, "p50_after_over_before": round(med["after"] / med["before"], 3),
            "after_requests_total": counted, "machine": machine()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])), indent=1))
