"""Planning time of a 1,000-task graph (decompose + match + submit plan), CPU seconds, on the demo and large
sites: `python3 results/dag/plan_bench.py` writes results/dag/plan-bench.json (target < 1 s)."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from slurm_plugin.dag.plan import plan_workflow
from slurm_plugin.dag.streams import random_workflow
from slurm_plugin.site import load_site
from slurm_plugin.sim.run import provenance

rows = []
for site_name in ("demo", "large"):
    site = load_site(site_name)
    for n in (1000, 10000):
        wf = random_workflow(n, seed=1)
        runs = []
        for _ in range(5):
            t0 = time.process_time()
            p = plan_workflow(wf, site)
            runs.append((time.process_time() - t0, p.timings))
        total = [r[0] for r in runs]
        med = sorted(runs, key=lambda r: r[0])[2][1]
        rows.append({"site": site_name, "tasks": n, "units": len(p.units), "median_cpu_s": statistics.median(total),
                     "min_cpu_s": min(total), "max_cpu_s": max(total), "median_parts_s": med})
        print(json.dumps(rows[-1]))
out = Path(__file__).with_name("plan-bench.json")
out.write_text(json.dumps({"rows": rows, "provenance": provenance()}, indent=2) + "\n")
