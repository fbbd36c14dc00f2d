"""Would the full power sweep have chosen otherwise on the 100k history? Replays the candidates the power halving
dropped in results/tune/timing-large-100k-halving.json (its ``power.halving.dropped``) and the site's timer on the
whole history, under the ranking that tune chose there, and judges each against the timer with the selection's
rule (:func:`slurm_plugin.tune.power.qualifies`): if none qualifies, every candidate in full chooses what halving
chose (the kept ones did not qualify either). Prints one JSON document (CPU s per replay, the process's own).

    nice -n 15 python3 results/tune/halving/power_dropped_100k.py [TIMING_JSON] > OUT.json
"""

from __future__ import annotations

import json
import os
import sys

from slurm_plugin.policy.spec import policy_from_dict
from slurm_plugin.sim.parallel import run_all
from slurm_plugin.sim.run import prepare, provenance
from slurm_plugin.tune import power
from slurm_plugin.tune.split import split_history


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "results/tune/timing-large-100k-halving.json"
    doc = json.load(open(path))
    p = prepare("synthetic:jobs=100000,seed=1,load=0.5,median_run_s=63000", "site_configs/large.yaml")
    split = split_history(p.workload.jobs)
    rank = policy_from_dict({"ranking": doc["ranking"]}).ranking
    t = float(doc["power"]["suspend_time_s"])
    archs = {g.arch for g in p.machine.groups if not g.gres}
    cands = power.candidates(len(archs) >= 2, [t], power.machine_breakeven_s(p.machine))
    timer = next(i for i, c in enumerate(cands) if c.is_timer)
    dropped = [d["index"] for d in doc["power"]["halving"]["dropped"]]
    assert all(f"{cands[i].policy} {cands[i].param}" == f"{d['policy']} {d['param']}"
               for i, d in zip(dropped, doc["power"]["halving"]["dropped"]))
    load0 = os.getloadavg()
    todo = [timer] + dropped
    got = run_all(power._timed_simulate, (p, cands, rank, split, True, None, None), todo, jobs=2)
    s = dict(zip(todo, (r for r, _ in got)))
    out = {"history": "synthetic:jobs=100000,seed=1,load=0.5,median_run_s=63000", "site": "site_configs/large.yaml",
           "ranking": doc["ranking"], "suspend_time_s": t, "load_before": load0, "load_after": os.getloadavg(),
           "timer": {"tune_kwh": s[timer].tune.energy_kwh, "tune_wait_s": s[timer].tune.avg_wait_s,
                     "cpu_s": got[0][1]},
           "dropped": [], **provenance()}
    for (i, (r, cpu)) in zip(todo[1:], got[1:]):
        ok, why = power.qualifies(r, s[timer])
        out["dropped"].append({"candidate": f"{cands[i].policy} {cands[i].param}", "tune_kwh": r.tune.energy_kwh,
                               "tune_wait_s": r.tune.avg_wait_s, "qualifies": ok, "why": why, "cpu_s": cpu})
    out["same_choice_as_full"] = not any(d["qualifies"] for d in out["dropped"])
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
