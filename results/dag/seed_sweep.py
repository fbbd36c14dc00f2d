"""avg wait of naive and rrg on the demo pipelines over loads x seeds (40 workflows each), the check the
late-binding change was judged by: `python3 results/dag/seed_sweep.py SEEDS [OUT.json]` (seeds 1,2,3,4,5,6 were
the streams looked at; 7,8 held out). Run it from a checkout of the commit to measure (rrg's code is that
commit's); README.md gives the figures before (99d524a) and after (5244e86)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from slurm_plugin.dag import sim, streams
from slurm_plugin.sim.run import provenance
from slurm_plugin.site import load_site

site = load_site("demo")
machine = sim.machine_for(site)
rows = []
for load in (0.5, 0.7, 0.9):
    for seed in (int(s) for s in sys.argv[1].split(",")):
        arrivals = streams.pipeline_stream(40, sim.capacity(machine), load, seed)
        row = {"load": load, "seed": seed}
        row.update({p: sim.evaluate(p, arrivals, site)["avg_wait_s"] for p in ("naive", "rrg")})
        row["rrg_vs_naive"] = row["rrg"] / row["naive"] - 1
        rows.append(row)
        print(json.dumps(row), flush=True)
if len(sys.argv) > 2:
    Path(sys.argv[2]).write_text(json.dumps({"rows": rows, "provenance": provenance()}, indent=1) + "\n")
