"""Power halving vs every power candidate in full (issue 13; slurm_plugin/tune/power.py: halve_power): run
:func:`tune_power` on one history both ways (every SuspendTime of the evaluation, or with ``--site-timer`` only the
site's as ``hetsched tune`` does; the default wait prices, FCFS, EASY backfill, one process) and write what each chose per timer, the chosen setting, the drops and the CPU s.

``python3 results/tune/halving/power_check.py HISTORY [--site S] [--site-timer] --json F``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import time
from pathlib import Path


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def main() -> None:
    from slurm_plugin.sim.run import prepare, provenance
    from slurm_plugin.tune.power import tune_power
    from slurm_plugin.tune.power_eval import summary
    from slurm_plugin.tune.split import split_history

    ap = argparse.ArgumentParser()
    ap.add_argument("history")
    ap.add_argument("--site")
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--modes", default="full,halving", help="full, halving or both (two processes may each run one)")
    ap.add_argument("--site-timer", action="store_true",
                    help="only the site's SuspendTime (what `hetsched tune` matches) instead of every one")
    a = ap.parse_args()
    p = prepare(a.history, a.site)
    split = split_history(p.workload.jobs)
    doc = {"history": a.history, "site": a.site, "timers": "the site's only" if a.site_timer else "every one", "jobs": len(p.workload.jobs), "machine": p.machine.name,
           "nodes": sum(g.count for g in p.machine.groups), "split": split.as_dict(), "runs": {},
           "host": os.uname().nodename, **provenance()}
    for mode, halving in (m for m in (("full", False), ("halving", True)) if m[0] in a.modes.split(",")):
        load0, c0, t0 = os.getloadavg(), _cpu(), time.perf_counter()
        r = tune_power(p, split, "fcfs", jobs=1, halving=halving, **({"timers": ()} if a.site_timer else {}))
        cpu, wall, load1 = _cpu() - c0, time.perf_counter() - t0, os.getloadavg()
        lab = lambda i: None if i is None else f"{r.candidates[i].policy} {r.candidates[i].param}"  # noqa: E731
        doc["runs"][mode] = {
            "cpu_s": cpu, "wall_s": wall, "load_before": load0, "load_after": load1, "replay_cpu_s": r.cpu,
            "chosen": lab(r.chosen),
            "per_timer": {f"{m.suspend_time_s:g}": {"outcome": m.outcome, "pick": lab(m.pick),
                                                    "qualifying": m.qualifying} for m in r.matches},
            "halving": r.halving.as_dict() if r.halving else None, "summary": summary(r)}
        print(f"== {mode}: {cpu:.1f} CPU s, {wall:.0f} s wall, load {load0[0]:.1f} -> {load1[0]:.1f}\n{summary(r)}",
              flush=True)
    if len(doc["runs"]) == 2:
        f, h = doc["runs"]["full"], doc["runs"]["halving"]
        doc["same_choice"] = f["chosen"] == h["chosen"]
        doc["same_per_timer"] = {t: f["per_timer"][t]["pick"] == h["per_timer"][t]["pick"] for t in f["per_timer"]}
        print(f"same chosen: {doc['same_choice']}; same pick per timer: {doc['same_per_timer']}")
    a.json.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
