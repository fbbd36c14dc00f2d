"""Which nodes slurmctld's backfill plans a blocked job on, against two rules, on the state rebuilt from a record
(run from the repository root; no simulation):

python3 results/sim/fidelity/plans.py results/sim/fidelity/fidelity_300_seed11.json [...]

For each CPU job's plan in the record's slurmctld log (``_dump_job_sched: JobId=J to start at S ... on nodes N``,
22.05 and 24.11 with DebugFlags=Backfill), the candidate nodes are those of the job's arch with enough cores, not
held by an earlier plan of the same cycle whose window (both ends rounded down to the minute) touches
[S, S + limit], all of them powered on (plans with a candidate off or in transition are left out). A node's
free time is when, by the recorded jobs on it and their time limits, the job's cores are free; the nodes free
by S are the ones a plan could take. Counted: plans whose node set is the engine's rule (the busiest of those,
latest free first, as ``Cluster.plan``) and the lowest Weight first (site order on ties; what
``SlurmTiming.plan_select`` does with every node on). "trivial": no more such nodes than the job needs.
"""

import datetime as dt
import gzip
import json
import re
import sys
from pathlib import Path

from hostlist import expand_hostlist

from slurm_plugin.site import Site

PLAN = re.compile(r"^\[(\S+)\] sched/backfill: _dump_job_sched: JobId=(\d+) to start at (\S+), end at (\S+) "
                  r"on nodes (\S+)")
BEGIN = re.compile(r"^\[(\S+)\] sched/backfill: _attempt_backfill: beginning")
STARTED = re.compile(r"^\[(\S+)\] sched/backfill: _start_job: Started JobId=(\d+)")


def epoch(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


def floor_min(t: float) -> float:
    return (int(t) // 60) * 60


def count(path: str) -> dict:
    d = json.load(open(path))
    rec, site = d["record"], Site.model_validate(d["site"])
    nodes, cap, weight, arch = [], {}, {}, {}
    for g in site.node_groups:
        for h in g.hostnames:
            nodes.append(h)
            cap[h], weight[h], arch[h] = g.cpu.cores * g.cpu.threads_per_core, g.cost_per_hour, g.cpu.arch
    jobs = {j["id"]: j for j in rec["jobs"]}
    on_node = {h: [] for h in nodes}
    for j in jobs.values():
        if j.get("start") and j.get("nodelist"):
            for h in expand_hostlist(j["nodelist"]):
                on_node.setdefault(h, []).append(j)

    def powered(h, t):
        state = "on"
        for when, s in rec["power"].get(h, []):
            if when <= t:
                state = s
        return state == "on"

    logs = [Path(path + ".slurmctld.log.gz"), Path(path).with_suffix(".slurmctld.log.gz")]  # both namings
    log = gzip.open(next(f for f in logs if f.exists()), "rt").read().splitlines()
    offset = None  # log's local time -> epoch: the first backfill start against the record's start
    for line in log:
        m = STARTED.match(line)
        if m and jobs.get(int(m[2]), {}).get("start"):
            offset = jobs[int(m[2])]["start"] - int(epoch(m[1]))
            break
    stats = {"plans": 0, "busiest_first": 0, "lowest_weight": 0, "both": 0, "neither": 0, "trivial": 0}
    windows = []
    for line in log:
        if BEGIN.match(line):
            windows = []
            continue
        m = PLAN.match(line)
        if not m or int(m[2]) not in jobs or jobs[int(m[2])]["spec"].get("gres"):
            continue
        j = jobs[int(m[2])]
        spec = j["spec"]
        k, need, limit = spec["nodes"], spec["cores"], spec["limit_min"] * 60
        now, start = epoch(m[1]) + offset, epoch(m[3]) + offset
        chosen = set(expand_hostlist(m[5]))
        held = set().union(*[ns for b, e, ns in windows if e > epoch(m[3]) and b <= epoch(m[3]) + limit])
        windows.append((floor_min(epoch(m[3])), floor_min(epoch(m[3]) + limit), chosen))
        cand = [h for h in nodes if (spec["arch"] is None or arch[h] == spec["arch"]) and cap[h] >= need
                and h not in held]
        if len(cand) <= k:
            stats["trivial"] += 1
            continue
        if not all(powered(h, now) for h in cand):
            continue
        free_at = {}
        for h in cand:
            running = sorted((o["start"] + o["spec"]["limit_min"] * 60, o["spec"]["cores"]) for o in on_node[h]
                             if o["start"] <= now + 1 < (o.get("end") or float("inf")))
            free, t = cap[h] - sum(c for _, c in running), now
            for end, cores in running:
                if free >= need:
                    break
                free, t = free + cores, max(now, end)
            free_at[h] = t if free >= need else float("inf")
        ready = [h for h in cand if free_at[h] <= start + 1]
        if len(ready) <= k:
            stats["trivial"] += 1
            continue
        busiest = set(sorted(ready, key=lambda h: -free_at[h])[:k])
        lowest = set(sorted(ready, key=lambda h: (weight[h], nodes.index(h)))[:k])
        a, b = busiest == chosen, lowest == chosen
        stats["plans"] += 1
        stats["busiest_first"] += a
        stats["lowest_weight"] += b
        stats["both"] += a and b
        stats["neither"] += not a and not b
    return stats


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p.rsplit("/", 1)[-1], count(p), flush=True)
