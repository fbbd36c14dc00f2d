"""CPU seconds (time.thread_time) of one FCFS + EASY run on large.yaml's synthetic workload, and a hash of the
start/allocation times (equal before/after an engine change that must not move schedules).

    PYTHONPATH=$PWD python3 results/sim/bench_large.py JOBS always-on|idle-suspend [--profile]
"""

import cProfile
import hashlib
import pstats
import sys
import time

import numpy as np

from slurm_plugin.sim.run import prepare, simulate

n, power = int(sys.argv[1]), sys.argv[2]
p = prepare(f"synthetic:jobs={n},seed=1", site="large")
prof = cProfile.Profile() if "--profile" in sys.argv else None
t0 = time.thread_time()
if prof:
    prof.enable()
row, out = simulate(p, "fcfs", backfill=True, power=power, suspend_time_s=600.0)
if prof:
    prof.disable()
cpu = time.thread_time() - t0
h = hashlib.sha256(np.nan_to_num(out.begin, nan=-1).tobytes() + np.nan_to_num(out.alloc, nan=-1).tobytes())
print(f"n={n} power={power} cpu_s={cpu:.2f} wall_s={row['wall_s']:.2f} hash={h.hexdigest()[:16]} "
      f"avg_wait={row['metrics']['avg_wait_s']:.3f} energy={row['metrics']['energy_kwh']:.3f}")
if prof:
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)
