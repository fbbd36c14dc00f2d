"""Soak test (issue 11; ``make soak``, not collected by pytest): a real local cluster with the shim, the admission
daemon and ``hetsched cycle run`` under steady sbatch submissions for a while, with faults injected:

* slurmctld restarted by pid (alternately SIGTERM and SIGKILL), then ``hetsched cluster up`` (warm start);
* the admission daemon killed by pid, then ``cluster up`` (the shim fails open meanwhile);
* one node's power-up fails intermittently (its slurmd port is held, so every boot in that window fails).

At the end the fault is cleared, held nodes are resumed (as an admin would), the queue drains, and a JSON
report says: jobs submitted vs accounted for (lost), jobs lost within Slurm's own state-save window before a
SIGKILL, shim fail-opens, power actions per node by cause, nodes left unrecoverable, and RSS/fd growth of the
daemon and the cycle process. Usage::

    python3 -m tests.soak.run --duration 1800 --out results/soak/soak.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import yaml

from slurm_plugin.cluster.local import LocalCluster
from slurm_plugin.cluster.procs import is_running, read_pid, spawn_detached, stop_pid
from slurm_plugin.decision import Journal
from slurm_plugin.fsio import write_file_atomic
from slurm_plugin.site import SITE_CONFIGS
from slurm_plugin.slurm import SlurmError

REPO = Path(__file__).resolve().parents[2]
FAULT_NODE = "rvn1"  # the only node of partition riscv
JOBS = [  # (sbatch args, weight): CPU jobs of both architectures, a GPU job, a few for the faulty node
    (["-p", "batch", "-n", "2"], 4), (["-p", "batch", "--constraint=aarch64", "-n", "16"], 3),
    (["-p", "gpu", "--gres=gpu:1"], 2), (["-p", "riscv", "-n", "4"], 1)]


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


def proc_stats(pid: int | None) -> dict | None:
    """RSS (kB) and open fds of a live process, or None."""
    if not pid:
        return None
    try:
        rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if line.startswith("VmRSS:"))
        return {"pid": pid, "rss_kb": rss, "fds": len(os.listdir(f"/proc/{pid}/fd"))}
    except (OSError, StopIteration):
        return None


def growth(samples: list[dict]) -> dict:
    """Per process lifetime (one pid): first and last RSS/fds; the report keeps the longest-lived one."""
    by_pid: dict[int, list[dict]] = {}
    for s in samples:
        by_pid.setdefault(s["pid"], []).append(s)
    if not by_pid:
        return {}
    pid, life = max(by_pid.items(), key=lambda kv: kv[1][-1]["t"] - kv[1][0]["t"])
    first, last = life[0], life[-1]
    return {"pid": pid, "lifetimes": len(by_pid), "seconds": round(last["t"] - first["t"]),
            "rss_kb_first": first["rss_kb"], "rss_kb_last": last["rss_kb"],
            "rss_kb_max": max(s["rss_kb"] for s in life), "rss_growth_kb": last["rss_kb"] - first["rss_kb"],
            "fds_first": first["fds"], "fds_last": last["fds"], "fds_max": max(s["fds"] for s in life)}


class Soak:
    def __init__(self, args):
        self.args = args
        self.root = Path(args.root)
        self.cluster = LocalCluster(self.root)
        self.done_dir = self.root / "soak-done"
        self.submitted: dict[int, float] = {}
        self.submit_errors = 0
        self.seen: dict[int, str] = {}
        self.kills: list[tuple[float, str]] = []
        self.samples: dict[str, list[dict]] = {"daemon": [], "cycle": []}
        self.cycle_pid: int | None = None
        self.cycle_restarts = 0
        self.blocker: socket.socket | None = None
        self.fault_on = False
        self.stop = threading.Event()
        self.fault_windows = 0
        self.rng = random.Random(args.seed)

    # --- setup ------------------------------------------------------------------------------------------
    def site_file(self) -> Path:
        data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
        data["slurm"].update(cluster_name="hs-soak", slurmctld_port=self.args.port_base,
                             slurmd_port=self.args.port_base + 1, resume_timeout=self.args.resume_timeout,
                             suspend_timeout=5)
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / "site.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def up(self) -> None:
        self.cluster.up(self.site, job_submit=True)

    def start_cycle(self) -> None:
        state = self.root / "cycle"
        state.mkdir(exist_ok=True)
        env = {**os.environ, "SLURM_CONF": str(self.cluster.conf), "PYTHONPATH": str(REPO)}
        self.cycle_pid = spawn_detached([sys.executable, "-m", "slurm_plugin", "cycle", "run", str(self.site),
                                         "--state-dir", str(state), "--interval", str(self.args.cycle_interval),
                                         "--wait-price", "0", "--warm", "0", "--idle-grace", "60"],
                                        self.root / "log" / "cycle.log", env=env)

    # --- faults -----------------------------------------------------------------------------------------
    def restart_ctld(self) -> None:
        how = "SIGKILL" if len([k for k in self.kills if k[1].startswith("slurmctld")]) % 2 else "SIGTERM"
        pid = self.cluster.state().get("slurmctld_pid")
        log(f"slurmctld {pid}: {how}")
        os.kill(pid, getattr(signal, how))
        self.kills.append((time.time(), f"slurmctld {how}"))
        deadline = time.monotonic() + 30
        while is_running(pid, "slurmctld") and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(self.args.ctld_down_s)  # submissions in this window fail (the client gets an error)
        self.up()

    def restart_daemon(self) -> None:
        pid = read_pid(self.root / "run" / "hs-daemon.pid")
        log(f"admission daemon {pid}: SIGKILL")
        if pid:
            os.kill(pid, signal.SIGKILL)
        self.kills.append((time.time(), "daemon SIGKILL"))
        time.sleep(self.args.daemon_down_s)  # the shim fails open meanwhile
        self.up()

    def fault(self, on: bool) -> None:
        """Start or end a window in which the node's power-ups fail: its port is held, so a slurmd started by
        the resume program cannot bind. The node is powered down first (as the planner or an admin might) so
        the next job for it needs a boot; the port is taken once its slurmd has stopped."""
        self.fault_on = on
        if on:
            self.cluster.client().run("scontrol", "update", f"nodename={FAULT_NODE}", "state=POWER_DOWN",
                                      check=False)
            log(f"fault window: {FAULT_NODE} powered down, its power-ups will fail")
        elif self.blocker is not None:
            self.blocker.close()
            self.blocker = None
            log("fault window over")

    def hold_port(self) -> None:
        if not self.fault_on or self.blocker is not None or self.cluster.slurmd_running(FAULT_NODE):
            return
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", self.cluster.state()["slurmd_ports"][FAULT_NODE]))
            s.listen()
            self.blocker = s
            self.fault_windows += 1
        except OSError:
            s.close()

    # --- work -------------------------------------------------------------------------------------------
    def submit(self) -> None:
        args = self.rng.choices([a for a, _ in JOBS], weights=[w for _, w in JOBS])[0]
        secs = self.rng.randint(3, 40)
        try:
            job = self.cluster.client().sbatch(*args, "--time=5", "--output=/dev/null",
                                               wrap=f"sleep {secs}; touch {self.done_dir}/$SLURM_JOB_ID")
            self.submitted[job] = time.time()
        except SlurmError:
            self.submit_errors += 1

    def submit_loop(self) -> None:
        """Steady submissions in their own thread, so they go on while slurmctld or the daemon is down."""
        while not self.stop.wait(self.args.submit_every):
            self.submit()

    def poll(self) -> None:
        try:
            out = self.cluster.client().run("squeue", "-h", "-t", "all", "-o", "%A %T", timeout=15).stdout
        except SlurmError:
            return
        for line in out.splitlines():
            jid, state = line.split()
            self.seen[int(jid)] = state

    def sample(self) -> None:
        now = time.time()
        for name, pid in (("daemon", read_pid(self.root / "run" / "hs-daemon.pid")), ("cycle", self.cycle_pid)):
            if (s := proc_stats(pid)) is not None:
                self.samples[name].append({"t": now, **s})
        if not is_running(self.cycle_pid, "slurm_plugin cycle run"):
            log("cycle run died: restarting it")
            self.cycle_restarts += 1
            self.start_cycle()

    # --- the run ----------------------------------------------------------------------------------------
    def run(self) -> dict:
        a = self.args
        self.site = self.site_file()
        self.cluster.down()
        self.done_dir.mkdir(parents=True, exist_ok=True)
        for f in self.done_dir.iterdir():
            f.unlink()
        self.up()
        ctld_log = self.root / "log" / "slurmctld.log"
        self.log_from = ctld_log.stat().st_size if ctld_log.exists() else 0
        self.start_cycle()
        start = time.monotonic()
        next_at = {"poll": 0.0, "sample": 0.0, "ctld": a.ctld_every, "daemon": a.daemon_every / 2,
                   "fault": a.fault_every / 3}
        submitter = threading.Thread(target=self.submit_loop, daemon=True)
        submitter.start()
        while (elapsed := time.monotonic() - start) < a.duration:
            if elapsed >= next_at["poll"]:
                self.poll()
                next_at["poll"] = elapsed + 5
            if elapsed >= next_at["sample"]:
                self.sample()
                next_at["sample"] = elapsed + 15
            if elapsed >= next_at["ctld"]:
                self.restart_ctld()
                next_at["ctld"] = elapsed + a.ctld_every
            if elapsed >= next_at["daemon"]:
                self.restart_daemon()
                next_at["daemon"] = elapsed + a.daemon_every
            if elapsed >= next_at["fault"]:
                self.fault(not self.fault_on)
                next_at["fault"] = elapsed + (a.fault_for if self.fault_on else a.fault_every)
            self.hold_port()
            time.sleep(0.5)
        self.stop.set()
        submitter.join()
        return self.finish(time.monotonic() - start)

    def finish(self, ran_s: float) -> dict:
        self.fault(False)
        client = self.cluster.client()
        self.sample()
        states = {n["NodeName"]: (n.get("State", ""), n.get("Reason", "")) for n in client.show_nodes()}
        held = sorted(n for n, (s, r) in states.items() if s.startswith("DOWN"))
        log(f"end of load: nodes DOWN {held}; resuming them as an admin would")
        for n in held:
            client.run("scontrol", "update", f"nodename={n}", "state=RESUME", check=False)
        deadline = time.monotonic() + self.args.drain_s
        while time.monotonic() < deadline:
            self.poll()
            queued = [j for j in self.submitted if self.seen.get(j) in ("PENDING", "RUNNING", "CONFIGURING",
                                                                        "COMPLETING")]
            if not queued:
                break
            time.sleep(5)
        self.poll()
        after = {n["NodeName"]: n.get("State", "") for n in client.show_nodes()}
        unrecoverable = sorted(n for n, s in after.items() if s.startswith("DOWN"))
        done = {int(p.name) for p in self.done_dir.iterdir() if p.name.isdigit()}
        ended = {j for j, s in self.seen.items() if s in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                                            "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED")}
        still = {j for j in self.submitted if self.seen.get(j) in ("PENDING", "RUNNING", "CONFIGURING",
                                                                   "COMPLETING")} - done
        lost = sorted(set(self.submitted) - done - ended - still)
        kill_times = [t for t, what in self.kills if what == "slurmctld SIGKILL"]
        in_window = [j for j in lost if any(0 <= t - self.submitted[j] <= 10 for t in kill_times)]
        with open(self.root / "log" / "slurmctld.log", errors="replace") as fh:
            fh.seek(self.log_from)
            shim_log = fh.read()
        detail = client.run("squeue", "-h", "-o", "%A %T %r %P", check=False).stdout.splitlines()
        journal = list(Journal(self.root / "cycle" / "journal.jsonl").entries())
        power = Counter((n, e.get("action"), e.get("cause")) for e in journal if e.get("kind") == "power"
                        for n in e.get("nodes", ()))
        per_node: dict[str, dict[str, int]] = {}
        for (n, action, cause), count in power.items():
            per_node.setdefault(n, {})[f"{action}/{cause}"] = count
        self.sample()
        stop_pid(self.cycle_pid or 0, "slurm_plugin cycle run")
        report = {
            "duration_s": round(ran_s), "settings": vars(self.args),
            "jobs": {"submitted": len(self.submitted), "completed": len(done),
                     "ended_otherwise": len(ended - done), "still_queued": len(still),
                     "still_queued_detail": detail[:20], "lost": len(lost),
                     "lost_ids": lost[:50], "lost_within_10s_before_a_slurmctld_sigkill": len(in_window),
                     "submit_errors": self.submit_errors,
                     "states_seen": dict(Counter(self.seen.get(j, "never seen") for j in self.submitted))},
            "faults": {"slurmctld_restarts": sum(w.startswith("slurmctld") for _, w in self.kills),
                       "slurmctld_sigkills": len(kill_times),
                       "daemon_kills": sum(w.startswith("daemon") for _, w in self.kills),
                       "power_fault_windows": self.fault_windows, "cycle_restarts": self.cycle_restarts},
            "admission": {"shim_fail_open": shim_log.count("(fail=open)"),
                          "shim_fallback_routed": shim_log.count("from the fallback table (fail=open)")},
            "power": {"actions_per_node": per_node,
                      "power_down_force_total": sum(c for (_, a, _), c in power.items() if a == "POWER_DOWN_FORCE"),
                      "nodes_down_at_end_of_load": held, "nodes_unrecoverable": unrecoverable},
            "processes": {name: growth(s) for name, s in self.samples.items()},
            "machine": {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
                        "slurm": self.cluster.state().get("slurm_version")},
            "commit": subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                                     text=True).stdout.strip(),
            "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        }
        return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=1800, help="seconds of load (default 30 min)")
    p.add_argument("--root", default=os.environ.get("HETSCHED_SOAK_ROOT", "/var/lib/hetsched/soak"))
    p.add_argument("--port-base", type=int, default=int(os.environ.get("HETSCHED_SOAK_PORT_BASE", "19500")))
    p.add_argument("--out", default="results/soak/soak.json")
    p.add_argument("--submit-every", type=float, default=3.0)
    p.add_argument("--cycle-interval", type=float, default=10.0)
    p.add_argument("--ctld-every", type=float, default=300.0)
    p.add_argument("--ctld-down-s", type=float, default=5.0)
    p.add_argument("--daemon-every", type=float, default=240.0)
    p.add_argument("--daemon-down-s", type=float, default=10.0)
    p.add_argument("--fault-every", type=float, default=180.0, help="seconds between power-fault windows")
    p.add_argument("--fault-for", type=float, default=90.0, help="seconds a power-fault window lasts")
    p.add_argument("--resume-timeout", type=int, default=20)
    p.add_argument("--drain-s", type=float, default=300.0, help="seconds to wait for the queue at the end")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    soak = Soak(args)
    try:
        report = soak.run()
    finally:
        soak.stop.set()
        soak.fault(False)
        stop_pid(soak.cycle_pid or 0, "slurm_plugin cycle run")
        soak.cluster.down()
    out = write_file_atomic(args.out, json.dumps(report, indent=1, sort_keys=True) + "\n")
    log(f"report: {out}")
    print(json.dumps({k: report[k] for k in ("jobs", "faults", "admission", "power", "processes")}, indent=1))
    return 1 if report["jobs"]["lost"] - report["jobs"]["lost_within_10s_before_a_slurmctld_sigkill"] else 0


if __name__ == "__main__":
    sys.exit(main())
