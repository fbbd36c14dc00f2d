"""How closely the real slurmctld repeats itself: two real replays of one workload (the same --jobs, --seed and
--compress), each job's start compared between them as the simulator's are compared with one (run from the
repository root; no cluster is started):

python3 results/sim/fidelity/repeat.py A.json B.json [--json]

Prints Kendall tau-b of the two runs' start times (each relative to its own first submit), the mean absolute
difference of starts, each run's mean wait, power-ups and energy, and the simulator's tau against each run.
A simulator cannot be expected to agree with one real run more closely than two real runs agree."""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau


def starts(record: dict) -> tuple[np.ndarray, np.ndarray]:
    """(start, submit) of every job, seconds from the run's first submit, in the workload's order."""
    jobs = record["jobs"]
    t0 = min(j["submit"] for j in jobs)
    return np.array([j["start"] - t0 for j in jobs]), np.array([j["submit"] - t0 for j in jobs])


def compare(a: dict, b: dict) -> dict:
    for key in ("jobs", "seed", "compress", "site", "power", "daemon"):
        if a["args"].get(key) != b["args"].get(key):
            sys.exit(f"repeat.py: the records differ in {key}: {a['args'].get(key)!r} vs {b['args'].get(key)!r}")
    sa, wa = starts(a["record"])
    sb, wb = starts(b["record"])
    if len(sa) != len(sb):
        sys.exit(f"repeat.py: {len(sa)} vs {len(sb)} jobs")
    return {"jobs": len(sa), "kendall_tau_real_real": float(kendalltau(sa, sb).statistic),
            "mean_abs_start_diff_s": float(np.mean(np.abs(sa - sb))),
            "mean_wait_s": [float(np.mean(sa - wa)), float(np.mean(sb - wb))],
            "power_ups_real": [a["power_ups_real"], b["power_ups_real"]],
            "energy_real_kwh": [a["energy_real_kwh"], b["energy_real_kwh"]],
            "kendall_tau_sim": [a["kendall_tau"], b["kendall_tau"]],
            "commits": [a["args"].get("run_commit", a.get("commit")), b["args"].get("run_commit", b.get("commit"))]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    out = compare(json.loads(args.a.read_text()), json.loads(args.b.read_text()))
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"{out['jobs']} jobs: real vs real tau {out['kendall_tau_real_real']:.3f}, mean |start difference| "
          f"{out['mean_abs_start_diff_s']:.1f} s; mean wait {out['mean_wait_s'][0]:.0f} / {out['mean_wait_s'][1]:.0f} s, "
          f"power-ups {out['power_ups_real'][0]} / {out['power_ups_real'][1]}, energy "
          f"{out['energy_real_kwh'][0]:.3f} / {out['energy_real_kwh'][1]:.3f} kWh; simulator vs each (as the record stored it): tau "
          f"{out['kendall_tau_sim'][0]:.3f} / {out['kendall_tau_sim'][1]:.3f}")


if __name__ == "__main__":
    main()
