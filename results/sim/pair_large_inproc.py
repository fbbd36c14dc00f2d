"""Side by side in one process: results/sim/bench_large.py's run (FCFS + EASY on large.yaml's synthetic workload)
with the simulator of two source trees, interleaved (A B per round, the order alternating), CPU seconds
(time.thread_time) of simulate() only; each tree's modules are imported once and kept (sys.modules swapped).
Prints one JSON line per run and a summary (min of the rounds, hash of start/allocation times per tree).

    python3 results/sim/pair_large_inproc.py BEFORE_TREE AFTER_TREE JOBS POWER ROUNDS [OUT.json]
"""

import hashlib
import json
import os
import platform
import subprocess
import sys
import time


def load(tree: str):
    for name in [m for m in sys.modules if m == "slurm_plugin" or m.startswith("slurm_plugin.")]:
        del sys.modules[name]
    sys.path.insert(0, tree)
    try:
        from slurm_plugin.sim.run import prepare, simulate  # noqa: PLC0415
        import slurm_plugin.workload.fit  # noqa: F401, PLC0415  (imported lazily by the cluster)
    finally:
        sys.path.remove(tree)
    return prepare, simulate, {m: sys.modules[m] for m in sys.modules if m.startswith("slurm_plugin")}


def main() -> None:
    import numpy as np
    before, after, jobs, power, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
    out = sys.argv[6] if len(sys.argv) > 6 else None
    trees = {"before": before, "after": after}
    loaded = {k: load(v) for k, v in trees.items()}
    preps = {k: loaded[k][0](f"synthetic:jobs={jobs},seed=1", site="large") for k in trees}
    runs = []
    for rnd in range(rounds):
        for k in (("before", "after") if rnd % 2 == 0 else ("after", "before")):
            prepare, simulate, mods = loaded[k]
            sys.modules.update(mods)
            load0 = os.getloadavg()[0]
            t0 = time.thread_time()
            row, o = simulate(preps[k], "fcfs", backfill=True, power=power, suspend_time_s=600.0)
            cpu = time.thread_time() - t0
            h = hashlib.sha256(np.nan_to_num(o.begin, nan=-1).tobytes() + np.nan_to_num(o.alloc, nan=-1).tobytes())
            r = {"round": rnd, "engine": k, "cpu_s": round(cpu, 3), "wall_s": round(row["wall_s"], 3),
                 "hash": h.hexdigest()[:16], "avg_wait_s": round(row["metrics"]["avg_wait_s"], 3),
                 "energy_kwh": round(row["metrics"]["energy_kwh"], 3),
                 "load_avg_1m": {"start": round(load0, 2), "end": round(os.getloadavg()[0], 2)}}
            print(json.dumps(r), flush=True)
            runs.append(r)
    commits = {k: subprocess.run(["git", "-C", v, "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True).stdout.strip() for k, v in trees.items()}
    summary = {k: min(r["cpu_s"] for r in runs if r["engine"] == k) for k in trees}
    files = {k: loaded[k][2]["slurm_plugin.sim.engine"].__file__ for k in trees}  # the engine each tree ran
    doc = {"command": f"python3 results/sim/pair_large_inproc.py BEFORE AFTER {jobs} {power} {rounds}",
           "cpu_clock": "time.thread_time", "commits": commits, "files": files, "jobs": jobs, "power": power,
           "machine": {"uname_m": platform.machine(), "nproc": os.cpu_count(), "python": platform.python_version(),
                       "cpu_model": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                                          if ln.startswith("model name")), "?")},
           "runs": runs, "min_cpu_s": summary, "same_schedule": len({r["hash"] for r in runs}) == 1}
    print(json.dumps({"min_cpu_s": summary, "commits": commits, "files": files, "same_schedule": doc["same_schedule"]}))
    if out:
        with open(out, "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)


main()
