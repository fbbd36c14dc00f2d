"""How closely the real slurmctld repeats itself: two or more real replays of one workload (the same --jobs,
--seed and --compress), each job's start compared between them as the simulator's are compared with one (run
from the repository root):

python3 results/sim/fidelity/repeat.py A.json B.json [C.json ...] [--simulate] [--json]

Prints Kendall tau-b of every pair of runs' start times (each relative to its own first submit), the mean
absolute difference of starts, each run's mean wait, power-ups and energy, and the simulator's tau against
each run: as the record stored it, or with ``--simulate`` re-simulated at this checkout's replay (no cluster is
started; ~2 CPU s a record), then also whether its mean wait, power-ups and energy fall within the real runs'
range. A simulator cannot be expected to agree with one real run more closely than two real runs agree."""

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

SAME = ("jobs", "seed", "compress", "site", "power", "daemon")


def starts(record: dict) -> tuple[np.ndarray, np.ndarray]:
    """(start, submit) of every job, seconds from the run's first submit, in the workload's order."""
    jobs = record["jobs"]
    t0 = min(j["submit"] for j in jobs)
    return np.array([j["start"] - t0 for j in jobs]), np.array([j["submit"] - t0 for j in jobs])


def pair(a: dict, b: dict) -> dict:
    """Real run ``a`` against real run ``b`` (two fidelity outputs of one workload)."""
    sa, _ = starts(a["record"])
    sb, _ = starts(b["record"])
    if len(sa) != len(sb):
        sys.exit(f"repeat.py: {len(sa)} vs {len(sb)} jobs")
    return {"kendall_tau": float(kendalltau(sa, sb).statistic), "mean_abs_start_diff_s": float(np.mean(np.abs(sa - sb)))}


def real_side(out: dict) -> dict:
    s, w = starts(out["record"])
    return {"mean_wait_s": float(np.mean(s - w)), "power_ups": out["power_ups_real"],
            "energy_kwh": out["energy_real_kwh"], "load": out.get("load_avg"),
            "commit": out["args"].get("run_commit", out.get("commit"))}


def simulated(out: dict) -> dict:
    """The simulator's figures for one record at this checkout's replay."""
    from slurm_plugin.sim.fidelity_replay import compare_record, replay_timing
    from slurm_plugin.site import Site
    r = compare_record(Site.model_validate(out["site"]), out["record"], replay_timing(out["record"], out["site"]))
    return {"kendall_tau": r["kendall_tau"], "mean_wait_s": r["mean_wait_sim_s"], "power_ups": r["power_ups_sim"],
            "energy_kwh": r["energy_sim_kwh"]}


def compare(outs: list[dict], names: list[str], simulate: bool = False) -> dict:
    for key in SAME:
        values = {repr(o["args"].get(key)) for o in outs}
        if len(values) > 1:
            sys.exit(f"repeat.py: the records differ in {key}: {', '.join(sorted(values))}")
    pairs = {f"{names[i]} / {names[j]}": pair(outs[i], outs[j]) for i, j in itertools.combinations(range(len(outs)), 2)}
    real = [real_side(o) for o in outs]
    sim = [simulated(o) if simulate else {"kendall_tau": o["kendall_tau"]} for o in outs]
    res = {"runs": names, "jobs": len(outs[0]["record"]["jobs"]), "pairs": pairs, "real": real, "simulator": sim,
           "simulator_source": "re-simulated at this checkout" if simulate else "as each record stored it"}
    if simulate:
        span = {k: (min(r[k] for r in real), max(r[k] for r in real)) for k in ("mean_wait_s", "power_ups", "energy_kwh")}
        res["real_range"] = span
        res["simulator_within_real_range"] = {k: sum(lo <= s[k] <= hi for s in sim) for k, (lo, hi) in span.items()}
    return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("records", type=Path, nargs="+")
    p.add_argument("--simulate", action="store_true", help="re-simulate each record at this checkout's replay")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if len(args.records) < 2:
        p.error("give two or more records of one workload")
    outs = [json.loads(path.read_text()) for path in args.records]
    out = compare(outs, [path.name for path in args.records], args.simulate)
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"{len(outs)} real runs of {out['jobs']} jobs; simulator {out['simulator_source']}")
    for name, r in out["pairs"].items():
        print(f"  real vs real {name}: tau {r['kendall_tau']:.3f}, mean |start difference| {r['mean_abs_start_diff_s']:.1f} s")
    for name, r, s in zip(out["runs"], out["real"], out["simulator"]):
        sim = f"simulator tau {s['kendall_tau']:.3f}"
        if "mean_wait_s" in s:
            sim += f", wait {s['mean_wait_s']:.0f} s, power-ups {s['power_ups']}, energy {s['energy_kwh']:.3f} kWh"
        print(f"  {name}: mean wait {r['mean_wait_s']:.0f} s, power-ups {r['power_ups']}, energy "
              f"{r['energy_kwh']:.3f} kWh; {sim}")
    if "real_range" in out:
        print("  simulator within the real runs' range: " + ", ".join(
            f"{k} {n}/{len(outs)}" for k, n in out["simulator_within_real_range"].items()))


if __name__ == "__main__":
    main()
