"""Replace some records' entries of a `rescore.py run` output by those of a re-run on just those records (run
from the repository root): python3 results/sim/fidelity/kill-check-s25/merge_fixed.py FULL.json PART.json OUT.json

Used once in session 25: the first rescores gave `kill_at_check` the killed flags in the record's job order, while
the replay's job table is sorted by submit time; the two differ on three 24.11 records (seed 1 trixie, seed 1 and
51 trixie with the suite), which were re-run after the fix (the others are unaffected, their orders are equal)."""

import json
import sys
from pathlib import Path

full, part, out = (Path(a) for a in sys.argv[1:4])
doc = json.loads(full.read_text())
fixed = json.loads(part.read_text())
for name, entry in fixed["records"].items():
    if name not in doc["records"]:
        sys.exit(f"{part}: {name} is not in {full}")
    doc["records"][name] = entry
doc["fixed_records"] = {"from": str(part.name), "records": sorted(fixed["records"]),
                        "provenance": fixed.get("provenance")}
Path(out).write_text(json.dumps(doc, indent=1) + "\n")
print(f"{out}: {len(fixed['records'])} of {len(doc['records'])} records replaced")
