"""Side by side: results/sim/bench_large.py in two source trees, interleaved (A B B A per pair) so both see the
same load, each run in its own process under nice 15; writes the runs (CPU s, hash, load, commit) as JSON.

    python3 results/sim/pair_large.py BEFORE_TREE AFTER_TREE JOBS POWER PAIRS OUT.json
"""

import json
import os
import platform
import subprocess
import sys

before, after, jobs, power, pairs, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), \
    sys.argv[6]


def commit(tree: str) -> str:
    r = subprocess.run(["git", "-C", tree, "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or open(os.path.join(tree, "COMMIT")).read().strip()


def run(tree: str) -> dict:
    load0 = os.getloadavg()[0]
    r = subprocess.run(["nice", "-n", "15", sys.executable, "results/sim/bench_large.py", jobs, power], cwd=tree,
                       env={**os.environ, "PYTHONPATH": tree}, capture_output=True, text=True, check=True)
    fields = dict(kv.split("=", 1) for kv in r.stdout.split())
    return {"tree": tree, "cpu_s": float(fields["cpu_s"]), "wall_s": float(fields["wall_s"]),
            "hash": fields["hash"], "avg_wait_s": float(fields["avg_wait"]), "energy_kwh": float(fields["energy"]),
            "load_avg_1m": {"start": load0, "end": os.getloadavg()[0]}}


machine = {"uname_m": platform.machine(), "nproc": os.cpu_count(), "python": platform.python_version(),
           "cpu_model": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
                             "?")}
trees = {"before": (before, commit(before)), "after": (after, commit(after))}
runs = []
for p in range(1, pairs + 1):
    for engine in ("before", "after", "after", "before"):
        row = {"pair": p, "engine": engine, "commit": trees[engine][1], **run(trees[engine][0])}
        print(json.dumps(row), flush=True)
        runs.append(row)
summary = {e: sorted(r["cpu_s"] for r in runs if r["engine"] == e) for e in trees}
doc = {"command": f"python3 results/sim/pair_large.py BEFORE AFTER {jobs} {power} {pairs} OUT.json "
                  f"(each run: cd TREE && PYTHONPATH=TREE nice -n 15 python3 results/sim/bench_large.py {jobs} {power})",
       "cpu_clock": "time.thread_time", "machine": machine, "jobs": int(jobs), "power": power, "runs": runs,
       "cpu_s_sorted": summary, "same_schedule": len({r["hash"] for r in runs}) == 1}
with open(out, "w") as f:
    json.dump(doc, f, indent=2, sort_keys=True)
print(json.dumps({"cpu_s_sorted": summary, "same_schedule": doc["same_schedule"]}))
