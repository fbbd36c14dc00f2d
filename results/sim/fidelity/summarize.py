"""Table of the fidelity records in this folder (run from the repository root):
python3 results/sim/fidelity/summarize.py

"load" is the host's 1-minute load average during the replay (min-max of the record's samples every 10 s;
records from before those samples: the three load averages when the replay ended). "bf cycles" counts the
backfill cycles slurmctld's log shows completed / broken off (records with the log only)."""

import json
from pathlib import Path

from slurm_plugin.sim.fidelity import fidelity_ok

HERE = Path(__file__).parent


def load(r: dict) -> str:
    samples = [s[1] for s in r["record"].get("load", [])]
    if samples:
        return f"{min(samples):.0f}-{max(samples):.0f}"
    return ", ".join(f"{x:.1f}" for x in r["args"].get("run_load_avg", []))


def cycles(r: dict) -> str:
    ends = r["record"].get("ctld_events", {}).get("bf_end")
    if not ends:
        return ""
    return f"{sum(e[1] == 'completed' for e in ends)} / {sum(e[1] != 'completed' for e in ends)}"


print("| record | jobs | tau (timing off) | wait MAE s | mean wait real / sim s | power-ups real / sim "
      "| energy real / sim kWh | Slurm | replayed at | load | bf cycles done / broken | fidelity_ok |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for f in sorted(HERE.glob("fidelity_*.json")):
    r = json.loads(f.read_text())
    ok, why = fidelity_ok(r)
    fails = why.split(": ", 1)[1] if not ok else "met"
    print(f"| {f.name} | {r['jobs']} | {r['kendall_tau']:.3f} ({r['timing_off']['kendall_tau']:.3f}) "
          f"| {r['wait_mae_s']:.1f} | {r['mean_wait_real_s']:.0f} / {r['mean_wait_sim_s']:.0f} "
          f"| {r['power_ups_real']} / {r['power_ups_sim']} | {r['energy_real_kwh']:.3f} / {r['energy_sim_kwh']:.3f} "
          f"| {r['slurm_version']} | {r['args'].get('run_commit', '')[:7]} | {load(r)} | {cycles(r)} | {fails} |")
