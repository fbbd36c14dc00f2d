"""Re-simulate every fidelity record in this folder with and without one Slurm timing switch and write the
issue-22 figures of both (run from the repository root; no cluster is started):

python3 results/sim/fidelity/rescore.py slurm_select OUT.json [RECORD.json ...]

Each record's real side is what it recorded; only the simulation changes (``replay_timing`` of the record, the
switch off vs on)."""

import dataclasses
import json
import sys
from pathlib import Path

from slurm_plugin.sim.fidelity_replay import compare_record, replay_timing
from slurm_plugin.sim.run import provenance
from slurm_plugin.site import Site

HERE = Path(__file__).parent
KEYS = ("jobs", "kendall_tau", "wait_mae_s", "mean_wait_real_s", "mean_wait_sim_s", "power_ups_real",
        "power_ups_sim", "energy_real_kwh", "energy_sim_kwh", "slurm_version")


def rescore(path: Path, switch: str) -> dict:
    data = json.loads(path.read_text())
    site, record = Site.model_validate(data["site"]), data["record"]
    timing = replay_timing(record, data["site"])
    out = {}
    for label, value in (("off", False), ("on", True)):
        result = compare_record(site, record, dataclasses.replace(timing, **{switch: value}))
        out[label] = {k: result[k] for k in KEYS}
    return out


if __name__ == "__main__":
    switch, target = sys.argv[1], Path(sys.argv[2])
    paths = [Path(p) for p in sys.argv[3:]] or sorted(HERE.glob("fidelity_*.json"))
    rows = {}
    for p in paths:
        rows[p.name] = rescore(p, switch)
        on, off = rows[p.name]["on"], rows[p.name]["off"]
        print(f"{p.name}: tau {off['kendall_tau']:.3f} -> {on['kendall_tau']:.3f}, mean wait "
              f"{off['mean_wait_sim_s']:.0f} -> {on['mean_wait_sim_s']:.0f} (real {on['mean_wait_real_s']:.0f}), "
              f"power-ups {off['power_ups_sim']} -> {on['power_ups_sim']} (real {on['power_ups_real']}), energy "
              f"{off['energy_sim_kwh']:.3f} -> {on['energy_sim_kwh']:.3f} (real {on['energy_real_kwh']:.3f})",
              flush=True)
    target.write_text(json.dumps({"switch": switch, "provenance": provenance(), "records": rows}, indent=1) + "\n")
