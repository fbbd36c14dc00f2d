"""Several `rescore.py run` outputs side by side, a column each (run from the repository root):

python3 results/sim/fidelity/planner-s24/columns.py LABEL:FILE:KEY [LABEL:FILE:KEY ...]

KEY is "replay" or "variant". Per record: tau, then the simulated mean wait, power-ups and energy as % off the
real ones; last, per column, the mean tau and how many records meet each issue-22 target (tau, wait,
power-ups, energy), 300-job and 1,000-job records apart. Only records of 300 jobs or more present in every
file are shown."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rescore import targets  # noqa: E402


def cell(x: dict) -> str:
    def off(sim, real):
        return (sim / real - 1) * 100 if real else float("nan")
    return (f"{x['kendall_tau']:.3f} {off(x['mean_wait_sim_s'], x['mean_wait_real_s']):+5.1f} "
            f"{off(x['power_ups_sim'], x['power_ups_real']):+5.1f} {off(x['energy_sim_kwh'], x['energy_real_kwh']):+5.1f}")


def main(args: list[str]) -> None:
    cols = []
    for a in args:
        label, f, key = a.split(":")
        cols.append((label, json.loads(Path(f).read_text())["records"], key))
    first = cols[0][1]
    names = sorted((n for n in set.intersection(*[set(r) for _, r, _ in cols]) if first[n]["replay"]["jobs"] >= 300),
                   key=lambda n: (first[n]["replay"]["jobs"], n))  # as rescore.table: records under 300 jobs left out
    print("record".ljust(34), " | ".join(label.ljust(23) for label, _, _ in cols))
    agg = {label: {300: [0, 0.0, [0] * 4], 1000: [0, 0.0, [0] * 4]} for label, _, _ in cols}
    for n in names:
        row = []
        for label, recs, key in cols:
            x = recs[n][key]
            row.append(cell(x))
            a = agg[label][1000 if x["jobs"] >= 1000 else 300]
            a[0] += 1
            a[1] += x["kendall_tau"]
            met = targets(x)
            for i, k in enumerate(("tau", "wait", "power_ups", "energy")):
                a[2][i] += met[k]
        print(n.replace("fidelity_", "").replace(".json", "").ljust(34), " | ".join(c.ljust(23) for c in row))
    for label, a in agg.items():
        print(label, " ".join(f"{size}-job: n {k} mean tau {s / max(k, 1):.3f} targets tau/wait/ups/energy {m}"
                              for size, (k, s, m) in a.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
