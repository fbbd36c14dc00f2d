"""Join `hetsched cost compare --scenarios ARM --output F` runs of one workload (one process per arm, so a run
that does not finish loses only its own arm) into one result as the command writes it: rows in the order given,
the headline and the plot recomputed from them. Refuses files of different workloads, sites or commits.

    python3 results/cost/join_arms.py OUT.json OUT.png arm1.json arm2.json ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from slurm_plugin.cli.output import write_json
from slurm_plugin.cost.compare import headline, plot


def join(paths: list[Path]) -> dict:
    docs = [json.loads(p.read_text()) for p in paths]
    first = docs[0]
    for p, d in zip(paths, docs):
        for key in ("workload", "site", "compress", "jobs"):
            if d[key] != first[key]:
                raise SystemExit(f"{p}: {key} {d[key]!r} differs from {paths[0]}'s {first[key]!r}")
        if d["provenance"]["git_commit"] != first["provenance"]["git_commit"]:
            raise SystemExit(f"{p}: commit {d['provenance']['git_commit']} differs from {paths[0]}'s")
    rows = [r for d in docs for r in d["rows"]]
    return {**{k: first[k] for k in ("workload", "site", "compress", "jobs", "dropped_unfit", "skipped")},
            "rows": rows, "headline": headline(rows), "provenance": first["provenance"],
            "joined_from": [p.name for p in paths]}


if __name__ == "__main__":
    out, png, *files = sys.argv[1:]
    doc = join([Path(f) for f in files])
    write_json(Path(out), doc)
    plot(doc["rows"], png, f"{doc['workload']} on {doc['site']}")
