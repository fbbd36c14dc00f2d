"""The selection rule with the bound's price (rule 1, ``select.choose(bound_price=...)``) offline on evaluation
JSONs: per backfill mode and price limit, the choice :func:`slurm_plugin.tune.select.choose` makes from the
JSON's validation entries (with its raised-load entries and incumbent where the JSON has them), and its verdict
held back (:func:`slurm_plugin.tune.verdict.judge`, as the evaluation's own).

Offline, so approximate in two ways, both said in the output: the weighted family's member fitted at each origin
is the one the JSON's run fitted (under the bound at any price), and a tie among candidates the run did not
replay at raised load falls through to the incumbent or the simplest.

``python3 results/tune/bound-price/price_rules.py [--prices 1.5,2,inf] EVAL.json ...``
"""

from __future__ import annotations

import argparse
import json
import math

from slurm_plugin.tune.candidates import COMPLEXITY
from slurm_plugin.tune.select import Entry, choose
from slurm_plugin.tune.verdict import judge


def complexity(label: str) -> float:
    """As :class:`slurm_plugin.tune.candidates.Candidate` (from the label: the JSON does not keep it)."""
    base = label.removesuffix("+floor")
    if base == "dqn-finetuned":
        return COMPLEXITY["dqn"] + 1.0
    return float(COMPLEXITY[base.split("(")[0]])


def _entries(table: dict) -> list[Entry]:
    return [Entry(lab, complexity(lab), v["objective"], max(v["block_max_wait_s"]), tuple(v["blocks"]),
                  tuple(v["block_max_wait_s"])) for lab, v in table.items()]


def pick(doc: dict, mode: str, price: float | None):
    """The choice under ``price`` (None: the bound at any price) from ``doc``'s ``mode`` selection."""
    sel = doc["selection"][mode]
    return choose(_entries(sel["validation"]), doc.get("max_wait_bound_s"), stressed=_entries(sel["stressed"]),
                  stress_factor=doc.get("stress_factor"), incumbent=doc.get("incumbent"), bound_price=price)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prices", default="1.25,1.5,2,3,5,10,inf")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args(argv)
    prices = [None if p == "inf" else float(p) for p in a.prices.split(",")]
    totals = {p: {"better": 0, "tie": 0, "WORSE": 0, "n/a": 0} for p in prices}
    for path in a.paths:
        doc = json.load(open(path))
        for mode in doc["selection"]:
            rows = [r for r in doc["ranking"] if r["backfill"] == (mode == "on")]
            cells = []
            for p in prices:
                ch = pick(doc, mode, p)
                if not any(r["policy"] == ch.winner for r in rows):
                    totals[p]["n/a"] += 1
                    cells.append(f"{p or math.inf:g}: {ch.winner} (no held-back row)")
                    continue
                v = judge([dict(r, chosen=r["policy"] == ch.winner) for r in rows], doc.get("max_wait_bound_s"))
                totals[p][v.verdict] += 1
                cost = f" cost {ch.bound_cost:.3g}x" if ch.bound_cost else ""
                cells.append(f"{p or math.inf:g}: {ch.winner} {v.tuned.avg_bsld:.2f} {v.verdict} "
                             f"{v.gain_pct:+.1f} %{cost}{' DROPPED' if ch.priced_out else ''}")
            print(f"{doc['workload']} backfill {mode}:\n  " + "\n  ".join(cells))
    for p, t in totals.items():
        print(f"price {p or math.inf:g}: " + ", ".join(f"{n} {k}" for k, n in t.items()))


if __name__ == "__main__":
    main()
