"""The age floor over a compiled ranking (the tuner's "+floor" rankings), side by side in one process: the floor
as it was (scores views only, never pure) against AgeFloor now (its inner ranking's scores_rows, pure). CPU
seconds of simulate(), min of 2 interleaved rounds, and whether the start times are equal.

    python3 results/sim/session21/floor_bench.py TRACE
"""
import sys
import time

import numpy as np

from slurm_plugin.policy import RankingSpec
from slurm_plugin.sim.policy import sim_ranking
from slurm_plugin.sim.run import prepare, simulate

class ViewsOnly:
    def __init__(self, floor):
        self.floor, self.name, self.static = floor, floor.name, False
    def scores(self, view):
        return self.floor.scores(view)

trace = sys.argv[1]
p = prepare(trace, None)
for policy in ("wfp3", "multifactor", "dqn"):
    spec = RankingSpec(name=policy, age_floor=True, age_floor_hours=24.0)
    t = {"views": [], "rows": []}
    for rnd in range(2):
        for kind in ("views", "rows"):
            r = sim_ranking(spec, None, float(p.machine.cores))
            if kind == "views":
                r = ViewsOnly(r)
            t0 = time.thread_time()
            _, out = simulate(p, r, backfill=True)
            t[kind].append(time.thread_time() - t0)
            t[kind + "_b"] = out.begin
    same = np.array_equal(t["views_b"], t["rows_b"], equal_nan=True)
    print(f"{trace.split('/')[-1][:12]} {policy}+floor24h views {min(t['views']):.2f} "
          f"rows {min(t['rows']):.2f} CPU s (min of 2) same={same}", flush=True)
