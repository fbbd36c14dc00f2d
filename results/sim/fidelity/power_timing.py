"""Power-down timing of the fidelity records, real against simulated (run from the repository root; no cluster
is started):

nice -n 15 python3 results/sim/fidelity/power_timing.py [--json OUT.json] [RECORD.json ...]

For every record with power saving (default: the 300-job ones in this folder), two delays per node power-down:
"idle": seconds from the node's last job end to the power-down's start (SuspendTime 20 s in every record), and
"down": seconds the node showed powering down (SuspendTimeout 10 s). Real: the record's node power timeline
(sinfo, polled every "poll" seconds on average: the run's span over its polls; a change shows up to that
late) and the jobs' recorded ends.
Simulated: the replay (``replay_timing``) with slurmctld's power scans off ("scan off", Slurm's test every
second) and on ("scan on", ``power_scan=True``), the engine's node-idle times less the replay's release_s.
Printed: the quartiles (25/50/75 %) of each and the count of power-downs (pooled over the records at the end)."""

import argparse
import json
from pathlib import Path

import numpy as np
from hostlist import expand_hostlist

from slurm_plugin.cli.output import write_json
from slurm_plugin.sim.fidelity_replay import ran_jobs, replay_timing, simulate_record
from slurm_plugin.sim.fidelity_workload import PARTITION
from slurm_plugin.sim.run import provenance
from slurm_plugin.site import Site

HERE = Path(__file__).parent


def _delays(ends: dict, changes: dict) -> tuple[list[float], list[float]]:
    """(idle, down) delays from per-host job ends and per-host [(time, state)] power changes."""
    idle, down = [], []
    for host, ch in changes.items():
        ch = sorted(ch)
        for k, (t, state) in enumerate(ch):
            if state != "shutting":
                continue
            before = [e for e in ends.get(host, []) if e <= t]
            if before:
                idle.append(t - max(before))
            if k + 1 < len(ch):
                down.append(ch[k + 1][0] - t)
    return idle, down


def real_delays(record: dict) -> tuple[list[float], list[float], float]:
    ends: dict[str, list[float]] = {}
    for j in record["jobs"]:
        if j.get("end") and j.get("nodelist"):
            for h in expand_hostlist(j["nodelist"]):
                ends.setdefault(h, []).append(j["end"])
    idle, down = _delays(ends, {h: [(t, s) for t, s in ch] for h, ch in record["power"].items()})
    jobs = ran_jobs(record)
    span = max(j["end"] for j in jobs) - min(j["submit"] for j in jobs)
    polls = record.get("polls")
    return idle, down, span / polls if isinstance(polls, int) and polls else float("nan")


def sim_delays(site: Site, record: dict, power_scan: bool) -> tuple[list[float], list[float], int]:
    timing = replay_timing(record, site.model_dump(mode="json"), power_scan=power_scan)
    sim = simulate_record(site, record, timing, trace=True)
    hosts = [h for g in site.node_groups
             if g.name in {p.name: set(p.node_groups) for p in site.partitions}.get(PARTITION, {g.name})
             for h in g.hostnames]
    ends: dict[str, list[float]] = {}
    changes: dict[str, list] = {h: [] for h in hosts}
    for t, i, what in sim["power_log"]:
        if what == "idle":
            ends.setdefault(hosts[i], []).append(t - timing.release_s)
        else:
            changes[hosts[i]].append((t, what))
    idle, down = _delays(ends, changes)
    return idle, down, sim["power_ups"]


def _q(v: list[float]) -> str:
    return "-" if not v else "/".join(f"{x:.1f}" for x in np.percentile(v, [25, 50, 75])) + f" (n={len(v)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", type=Path, nargs="*")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    paths = sorted(a.records or HERE.glob("fidelity_300_*.json"))
    pooled = {k: {"idle": [], "down": []} for k in ("real", "scan off", "scan on")}
    rows = {}
    print("| record | Slurm | idle real | idle scan off | idle scan on | down real | down scan off | down scan on | poll s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in paths:
        data = json.loads(p.read_text())
        site, record = Site.model_validate(data["site"]), data["record"]
        if not record.get("power"):
            continue
        idle, down, poll = real_delays(record)
        row = {"real": {"idle": idle, "down": down, "poll_s": poll}}
        for label, on in (("scan off", False), ("scan on", True)):
            i, d, ups = sim_delays(site, record, on)
            row[label] = {"idle": i, "down": d, "power_ups": ups}
        for k in pooled:
            pooled[k]["idle"] += row[k]["idle"]
            pooled[k]["down"] += row[k]["down"]
        rows[p.name] = row
        print(f"| {p.name} | {record.get('slurm_version')} | " + " | ".join(
            _q(row[k][w]) for w in ("idle", "down") for k in ("real", "scan off", "scan on")) + f" | {poll:.1f} |",
              flush=True)
    print("| pooled | | " + " | ".join(_q(pooled[k][w]) for w in ("idle", "down")
                                     for k in ("real", "scan off", "scan on")) + " | |")
    if a.json:
        write_json(a.json, {"provenance": provenance(), "records": rows, "pooled": pooled})


if __name__ == "__main__":
    main()
