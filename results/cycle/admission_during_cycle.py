"""Admission latency while a cycle runs (issue 23): the daemon's ask path on the large live site, side by side
without and with ``hetsched cycle once`` running back to back.

Against the running local cluster at --root (e.g. large.yaml, ``cluster up --powered-down``, its queue filled by
``bench cycle --live --fill M --unheld``): starts ``hetsched daemon run`` (refresh 5 s, the queue every 30 s: the
defaults), waits for its first snapshot and one whole queue refresh, then calls the real job_submit.lua shim
(lua5.1, stand-in slurm table: ``slurm_plugin.daemon.bench.shim_roundtrip``) at --rate for --seconds, once with
nothing else running and once while cycles run one after another (their own state directory; the first sets
every band); between them the same driver against a server that answers at once (what the loaded machine itself
costs, ``roundtrip_floor``; and once more while the cycles go on). Per phase: the round trip (p50/p99/max µs), the cycles run and their wall time, the load,
and from the daemon's own trace (``HETSCHED_ADMISSION_TRACE``, :mod:`slurm_plugin.daemon.trace`) its service time per
request inside the process (wall and the serving thread's CPU, µs) and its event loop's lag (a 10 ms timer's
lateness: how long a request arriving then waited before the daemon could start on it). The
daemon runs from the PYTHONPATH this script gets (so an older checkout can be measured the same way) and is
stopped by its pid at the end.

Usage: python3 results/cycle/admission_during_cycle.py --root DIR [--rate 100] [--seconds 60]
       [--metrics-port 18150] [--no-cycle] [--cycle-code DIR] [--cycle-nice N] [--cycle-sched idle]
       [--daemon-nice N] [--cpu-latency-us N] [--output F]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if not os.environ.get("PYTHONPATH"):  # else the checkout it names is the one measured
    sys.path.insert(0, str(REPO))

from slurm_plugin.daemon.bench import roundtrip_floor, shim_roundtrip  # noqa: E402
from slurm_plugin.daemon.bench import summarize  # noqa: E402
from slurm_plugin.daemon.process import DaemonProcess  # noqa: E402
from slurm_plugin.daemon.trace import TRACE_ENV, read_trace  # noqa: E402
from slurm_plugin.pack.bench import machine  # noqa: E402


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def cycles_until(stop: threading.Event, root: Path, policy: Path, out: list, code: str | None,
                 niceness: int = 0, sched: str = "other") -> None:
    """``cycle once`` back to back until ``stop``: wall seconds and exit code of each (``code``: the checkout
    the cycle runs from, else this one's; ``sched`` "idle": under ``chrt --idle 0``, what ``CPUSchedulingPolicy=idle``
    in a unit would give; the shipped unit does not set it, see results/cycle/README.md)."""
    state = root / "admission-cycle"
    shutil.rmtree(state, ignore_errors=True)
    env = {**os.environ, "SLURM_CONF": str(root / "etc" / "slurm.conf"), "HETSCHED_SLURM_TIMEOUT": "600",
           **({"PYTHONPATH": code} if code else {})}
    while not stop.is_set():
        t0 = time.perf_counter()
        proc = subprocess.run([*(["chrt", "--idle", "0"] if sched == "idle" else []),
                               *(["nice", "-n", str(niceness)] if niceness else []),
                               sys.executable, "-m", "slurm_plugin", "-v", "cycle", "once", "--site",
                               str(root / "site.yaml"), "--state-dir", str(state), "--policy-file", str(policy)],
                              env=env, capture_output=True, text=True)
        said = [line.split("INFO slurm_plugin.cycle.runner: ", 1)[-1] for line in proc.stderr.splitlines()
                if "slurm_plugin.cycle.runner: cycle" in line]
        out.append({"wall_s": round(time.perf_counter() - t0, 2), "exit": proc.returncode, "logged": said})


def wait_for_snapshot(port: int, timeout: float = 600.0) -> None:
    """Until the daemon's metrics show a snapshot age (NaN before its first snapshot)."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        except OSError:
            text = ""
        ages = [line.split()[-1] for line in text.splitlines()
                if line.startswith("hetsched_admission_snapshot_age_seconds ")]
        if ages and ages[0].lower() != "nan":
            return
        time.sleep(1)
    raise RuntimeError(f"no snapshot in the daemon within {timeout:.0f} s")


def measured(socket, rate: float, seconds: float, trace: Path) -> dict:
    """One phase of calls through the shim, with the daemon's own timing of the same window."""
    t0 = time.monotonic()
    out = shim_roundtrip(socket, rate, seconds)
    t1 = time.monotonic()
    time.sleep(3)  # the daemon writes its trace in batches
    own = read_trace(str(trace), t0, t1)
    out["daemon_service_us"] = summarize(own["wall_us"])
    out["daemon_service_cpu_us"] = summarize(own["cpu_us"])
    out["daemon_loop_lag_us"] = summarize(own["lag_us"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--metrics-port", type=int, default=18150)
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--no-cycle", action="store_true", help="measure alone (and the floor) only")
    ap.add_argument("--cycle-code", default=None, help="the checkout the cycles run from (default: this one)")
    ap.add_argument("--cycle-nice", type=int, default=0, help="run the cycles under nice -n N (a background job "
                    "beside the daemon)")
    ap.add_argument("--cycle-sched", choices=("other", "idle"), default="other", help="the cycles' CPU "
                    "scheduling policy: idle (SCHED_IDLE) yields a core at once to any normal task that wakes")
    ap.add_argument("--daemon-nice", type=int, default=0, help="run the daemon under nice -n N (negative: ahead "
                    "of slurmctld and the cycle)")
    ap.add_argument("--cpu-latency-us", type=int, default=None, help="the daemon's --cpu-latency-us (hold "
                    "/dev/cpu_dma_latency at N µs while it serves; the floor phases then run with it held too)")
    args = ap.parse_args()
    policy = args.root / "bench-policy.json"
    if not policy.exists():
        policy.write_text(json.dumps({"ranking": {"name": "dqn"}, "packing": {"enabled": True},
                                      "scaling": {"name": "planner"}}))
    trace = args.root / "admission-trace.txt"
    trace.unlink(missing_ok=True)
    os.environ[TRACE_ENV] = str(trace)  # the daemon inherits it
    extra = ("--cpu-latency-us", str(args.cpu_latency_us)) if args.cpu_latency_us is not None else ()
    daemon = DaemonProcess(args.root, refresh_s=5.0, metrics_listen=f"127.0.0.1:{args.metrics_port}",
                           extra=extra, niceness=args.daemon_nice)
    doc: dict = {"machine": machine(), "daemon_code": os.environ.get("PYTHONPATH") or str(REPO),
                 "cycle_code": args.cycle_code or os.environ.get("PYTHONPATH") or str(REPO), "rate": args.rate,
                 "seconds": args.seconds, "load_start": load(), "niceness": os.nice(0),
                 "cycle_nice": args.cycle_nice, "cycle_sched": args.cycle_sched, "daemon_nice": args.daemon_nice,
                 "cpu_latency_us": args.cpu_latency_us}
    try:
        daemon.start(wait_for_snapshot=False, timeout=120)  # its partitions are DOWN: nothing is routed
        wait_for_snapshot(args.metrics_port)
        time.sleep(35)  # one whole queue refresh (jobs_refresh_s 30) has come back
        doc["alone"] = {**measured(daemon.socket, args.rate, args.seconds, trace), "load": load()}
        print("alone", doc["alone"]["roundtrip_us"], doc["alone"]["daemon_service_us"], flush=True)
        doc["floor"] = {"roundtrip_us": roundtrip_floor(args.rate, args.seconds), "load": load()}
        print("floor", doc["floor"]["roundtrip_us"], flush=True)
        if args.no_cycle:
            return 0
        stop, runs = threading.Event(), []
        worker = threading.Thread(target=cycles_until, args=(stop, args.root, policy, runs, args.cycle_code,
                                                                args.cycle_nice, args.cycle_sched))
        worker.start()
        time.sleep(5)  # the first cycle is reading the queue
        doc["with_cycle"] = measured(daemon.socket, args.rate, args.seconds, trace)
        doc["with_cycle"]["load"] = load()
        # the machine's floor while the cycles go on (slurmctld answers them at its own priority)
        doc["floor_with_cycle"] = {"roundtrip_us": roundtrip_floor(args.rate, args.seconds), "load": load(),
                                   "cycles_before": len(runs)}
        print("floor with cycle", doc["floor_with_cycle"]["roundtrip_us"], flush=True)
        stop.set()
        worker.join()
        doc["with_cycle"]["cycles"] = runs
        print("with cycle", doc["with_cycle"]["roundtrip_us"], doc["with_cycle"]["daemon_service_us"], runs, flush=True)
    finally:
        daemon.stop()
        doc["load_end"] = load()
        text = json.dumps(doc, indent=1)
        if args.output:
            args.output.write_text(text + "\n")
        else:
            print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
