"""What one ranking replay costs on a prefix of a history's tuning part (CPU s of this process), by candidate
and prefix share: the cost model behind the tuner's successive halving (slurm_plugin/tune/sweep.py).

    nice -n 15 python3 results/tune/replay_cost.py HISTORY [--site S] [--fractions 0.111,0.333,1] [--labels "fcfs;dqn"]
    nice -n 15 python3 results/tune/replay_cost.py HISTORY --site S --power   # one power replay of the whole history

Prints one JSON line per replay: label, backfill, fraction, jobs, cpu_s. ``--power``: the power sweep's first
candidate (Slurm's idle timer at the site's SuspendTime, FCFS) on the whole history, as ``hetsched tune`` runs
each of its power candidates.
"""

from __future__ import annotations

import argparse
import json
import time

from slurm_plugin.sim.run import prepare
from slurm_plugin.tune.candidates import fixed_candidates, weighted_grid
from slurm_plugin.tune.sweep import Twin, run_one, screen_twin


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("history")
    ap.add_argument("--site")
    ap.add_argument("--fractions", default="0.111,0.333,1")
    ap.add_argument("--labels", default="fcfs;sjf+floor;f1;weighted(est=1,size=0.5,age=0.5);dqn")
    ap.add_argument("--no-backfill", action="store_true")
    ap.add_argument("--power", action="store_true")
    a = ap.parse_args()
    p = prepare(a.history, a.site)
    twin = Twin.of(p, "avg_bsld")
    if a.power:
        from slurm_plugin.tune import power

        t0 = time.process_time()
        power.tune_power(p, twin.split, jobs=1, timers=(), prices=(), matched=False, backfill=not a.no_backfill, halving=False)
        print(json.dumps({"label": "idle timer (power states)", "backfill": not a.no_backfill, "fraction": "whole",
                          "jobs": len(p.workload.jobs), "cpu_s": round(time.process_time() - t0, 2)}), flush=True)
        return
    cands = {c.label: c for c in fixed_candidates() + weighted_grid()}
    for frac in (float(f) for f in a.fractions.split(",")):
        t = twin if frac >= 1 else screen_twin(twin, frac)
        for lab in a.labels.split(";"):
            t0 = time.process_time()
            run_one(t, (cands[lab], not a.no_backfill, "tune"))
            print(json.dumps({"label": lab, "backfill": not a.no_backfill, "fraction": frac,
                              "jobs": len(t.tune.workload.jobs), "cpu_s": round(time.process_time() - t0, 2)}),
                  flush=True)


if __name__ == "__main__":
    main()
