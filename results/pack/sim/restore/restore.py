"""Run from the repository root: python results/pack/sim/restore/restore.py SPEC SITE [OUT.json]. Experiment: packing that undoes narrowings the MILP no longer backs (MilpPacking(restore_unassigned=True))."""
import json, sys
from slurm_plugin.sim import hooks
from slurm_plugin.sim.packing import MilpPacking
from slurm_plugin.sim.run import prepare, simulate, provenance
hooks.PACKINGS["milp-restore"] = lambda site, machine, jobs, **kw: MilpPacking(site, machine, jobs, restore_unassigned=True)
p = prepare(sys.argv[1], sys.argv[2])
rows = []
for pk in ("off", "milp-restore"):
    row, _ = simulate(p, "multifactor", True, packing=pk)
    rows.append(row)
a, b = rows[0]["metrics"], rows[1]["metrics"]
print(f"{sys.argv[1]}: util on/off {b['utilization'] / a['utilization']:.3f}, wait on/off {b['avg_wait_s'] / a['avg_wait_s']:.3f}"
      f" ({a['avg_wait_s']:.0f} -> {b['avg_wait_s']:.0f} s), timeouts {rows[0]['speed_timeouts']} / {rows[1]['speed_timeouts']},"
      f" moves {rows[1]['pack_stats']['moves']}")
if len(sys.argv) > 3:
    open(sys.argv[3], "w").write(json.dumps({"rows": rows, "provenance": provenance()}, indent=2, sort_keys=True, default=float) + "\n")
