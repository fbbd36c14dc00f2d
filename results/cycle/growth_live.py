"""Growth of each step of the live cycle with the pending queue (issue 23: "no step grows faster than linearly";
the log-log slope over 1k/10k/100k, :func:`slurm_plugin.cycle.bench.exponents`).

Reads ``hetsched bench cycle --live`` outputs of one site at several queue sizes and fits, per measure:
the pure decide's steps (CPU s, ``rows``), the cycle's queue read (CPU and wall s), and of the first and the
last ``cycle once`` run (first: every band set; last: the steady state) the phases (read, decide, apply: wall s
as the cycle logs them), each step (wall s) and the process's CPU s and wall s. Beside the fitted exponent,
``last_slope`` is the slope between the two largest queues alone (fixed costs flatten the fit at 1k); a measure
under 1 ms at either of them (the cycle logs steps to the millisecond) has none.

Usage: python3 results/cycle/growth_live.py A.json B.json C.json [--output F]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from slurm_plugin.cycle.bench import exponents  # noqa: E402


def rows_of(doc: dict) -> list[dict]:
    base = {"format": "live", "nodes": doc["nodes"], "pending": doc["pending"]}
    rows = [{**base, "step": f"pure:{r['step']}", "seconds": r["seconds"]} for r in doc["rows"]]
    read = doc["snapshot_reads"]["nodes+partitions+queue"]
    rows += [{**base, "step": "read:cpu", "seconds": read["cpu_s"]},
             {**base, "step": "read:wall", "seconds": read["wall_s"]}]
    for name, c in (("first", doc["cycles"][0]), ("steady", doc["cycles"][-1])):
        rows += [{**base, "step": f"{name}:{k}", "seconds": v} for k, v in (c.get("phases_s") or {}).items()]
        rows += [{**base, "step": f"{name}:step:{k}", "seconds": v} for k, v in (c.get("steps_s") or {}).items()]
        rows += [{**base, "step": f"{name}:cpu", "seconds": c["cpu_s"]},
                 {**base, "step": f"{name}:wall", "seconds": c["wall_s"]}]
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", type=Path)
    ap.add_argument("--output", type=Path, default=None)
    args = ap.parse_args()
    docs = [json.loads(p.read_text()) for p in args.inputs]
    rows = [r for d in docs for r in rows_of(d)]
    out = {"inputs": [str(p) for p in args.inputs], "rows": rows, "exponents": exponents(rows)}
    for e in out["exponents"]:
        pts = sorted((r["pending"], r["seconds"]) for r in rows if r["step"] == e["step"])
        (p0, s0), (p1, s1) = pts[-2], pts[-1]  # the slope between the two largest queues alone
        e["last_slope"] = math.log(s1 / s0) / math.log(p1 / p0) if s0 >= 1e-3 and s1 >= 1e-3 else None
        last = "  n/a" if e["last_slope"] is None else f"{e['last_slope']:5.2f}"
        print(f"{e['step']:<22} exponent {e['exponent']:5.2f} (last two: {last})  "
              + "  ".join(f"{k}: {v:.3f}" for k, v in pts))
    if args.output:
        args.output.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
