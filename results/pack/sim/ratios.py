"""Prints the on/off ratio table of every simulator comparison in this folder (run from the repository root):
``python results/pack/sim/ratios.py``."""
import json
from pathlib import Path

HERE = Path(__file__).parent
print("| workload | seed | jobs | flexible moved | util off | util on | util on/off | avg wait off s | avg wait on s "
      "| wait on/off | bsld on/off | speed timeouts off / on | packing s total (max one step) | commit |")
print("|" + "---|" * 14)
for path in sorted(HERE.glob("*.json")):
    d = json.loads(path.read_text())
    rows = {r["packing"]: r for r in d["rows"]}
    off, on = rows["off"], rows["milp"]
    a, b, st = off["metrics"], on["metrics"], on["pack_stats"]
    print(f"| {path.stem.rsplit('_', 1)[0]} ({on['site']}) | {path.stem.rsplit('_s', 1)[1]} | {on['jobs']} "
          f"| {st['moves']} | {a['utilization']:.3f} | {b['utilization']:.3f} "
          f"| {b['utilization'] / a['utilization']:.3f} "
          f"| {a['avg_wait_s']:.0f} | {b['avg_wait_s']:.0f} | {b['avg_wait_s'] / max(a['avg_wait_s'], 1e-9):.3f} "
          f"| {b['avg_bsld'] / a['avg_bsld']:.3f} | {off['speed_timeouts']} / {on['speed_timeouts']} "
          f"| {st['solve_s']:.1f} ({st['max_solve_s']:.3f}) | {d['provenance']['git_commit'][:7]} |")
