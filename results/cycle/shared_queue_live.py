"""One queue read for the daemon and the cycle (issue 23 item 2), live: slurmctld's own count and time of full
queue reads (sdiag's REQUEST_JOB_INFO) while the admission daemon and ``hetsched cycle run`` both run, side by
side without and with the queue file (``cycle run --queue-file F``, the daemon's ``--queue-file F``).

Against the running local cluster at --root (e.g. the large site of ``large_live.py --keep``, 100,000 pending):
per mode, starts the daemon (refresh 5 s, queue every 30 s: the defaults) and ``cycle run --interval 30`` (nice
15, a state directory of its own), waits --seconds, stops both by pid and reads sdiag's RPC table before and
after. Writes per mode the REQUEST_JOB_INFO count and slurmctld's total time for them, every message type's total
time, and the daemon's log lines about the queue file.

Usage: python3 results/cycle/shared_queue_live.py --root DIR [--seconds 180] [--output F]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(REPO))

from slurm_plugin.daemon.process import DaemonProcess  # noqa: E402
from slurm_plugin.pack.bench import machine  # noqa: E402
from slurm_plugin.slurm import SlurmClient  # noqa: E402
from slurm_plugin.slurm.sdiag import rpc_stats  # noqa: E402


def sdiag(client: SlurmClient) -> dict:
    by_type, _ = rpc_stats(client.run("sdiag").stdout)
    return {k: (v.count, v.total_time_us) for k, v in by_type.items()}


def delta(before: dict, after: dict) -> dict:
    return {k: (c - before.get(k, (0, 0))[0], t - before.get(k, (0, 0))[1]) for k, (c, t) in after.items()
            if c != before.get(k, (0, 0))[0]}


def one_mode(root: Path, shared: bool, seconds: float, port: int) -> dict:
    work = root / ("shared-queue" if shared else "separate-queue")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(mode=0o755)
    queue = work / "queue.pickle"
    client = SlurmClient(str(root / "etc" / "slurm.conf"))
    daemon = DaemonProcess(root, refresh_s=5.0, metrics_listen=f"127.0.0.1:{port}",
                           extra=("--queue-file", str(queue)) if shared else ())
    log_from = daemon.log.stat().st_size if daemon.log.exists() else 0
    env = {**os.environ, "SLURM_CONF": str(root / "etc" / "slurm.conf"), "HETSCHED_SLURM_TIMEOUT": "600"}
    cycle_log = open(work / "cycle.log", "w")
    before = sdiag(client)
    t0 = time.time()
    daemon.start(wait_for_snapshot=False, timeout=120)
    cycle = subprocess.Popen(["nice", "-n", "15", sys.executable, "-m", "slurm_plugin", "-v", "cycle", "run", "--site",
                              str(root / "site.yaml"), "--state-dir", str(work / "state"), "--interval", "30",
                              "--metrics-listen", "off", "--policy-file", str(root / "bench-policy.json"),
                              *(("--queue-file", str(queue)) if shared else ())],
                             env=env, stdout=cycle_log, stderr=cycle_log)
    try:
        time.sleep(seconds)
    finally:
        cycle.send_signal(signal.SIGTERM)
        try:
            cycle.wait(120)
        except subprocess.TimeoutExpired:
            cycle.kill()
            cycle.wait(10)
        daemon.stop()
        cycle_log.close()
    after = sdiag(client)
    d = delta(before, after)
    said = daemon.log.read_text()[log_from:].splitlines()
    cycles = [line for line in (work / "cycle.log").read_text().splitlines() if "cycle phases" in line]
    job_info = d.get("REQUEST_JOB_INFO", (0, 0))
    return {"shared": shared, "seconds": round(time.time() - t0, 1), "cycles": len(cycles),
            "job_info_rpcs": job_info[0], "job_info_time_s": round(job_info[1] / 1e6, 3),
            "all_rpc_time_s": round(sum(t for _, t in d.values()) / 1e6, 3),
            "rpcs": {k: {"count": c, "total_time_s": round(t / 1e6, 3)} for k, (c, t) in sorted(d.items())},
            "daemon_queue_log": [line for line in said if "queue file" in line or "jobs from" in line][:5],
            "load": [round(x, 2) for x in os.getloadavg()]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=180.0)
    ap.add_argument("--metrics-port", type=int, default=18152)
    ap.add_argument("--output", type=Path, default=None)
    args = ap.parse_args()
    policy = args.root / "bench-policy.json"
    if not policy.exists():
        policy.write_text(json.dumps({"ranking": {"name": "dqn"}, "packing": {"enabled": True},
                                      "scaling": {"name": "planner"}}))
    doc: dict = {"machine": machine(), "code": os.environ.get("PYTHONPATH") or str(REPO), "modes": []}
    for shared in (False, True):
        doc["modes"].append(one_mode(args.root, shared, args.seconds, args.metrics_port))
        m = doc["modes"][-1]
        print(f"shared={shared}: {m['cycles']} cycles, REQUEST_JOB_INFO {m['job_info_rpcs']} "
              f"({m['job_info_time_s']} s of slurmctld), all RPCs {m['all_rpc_time_s']} s", flush=True)
    (args.output.write_text if args.output else sys.stdout.write)(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
