"""Two simpler selection rules against the shipped one, offline on evaluation JSONs (no replay): per backfill
mode, the choice each rule makes from the JSON's validation entries, and its verdict on the held-back part
(:func:`slurm_plugin.tune.verdict.judge`, the same as the shipped choice's).

- ``shipped``: the JSON's own choice (rules 1-4: the max-wait bound per binding block, ties by noise and
  consistency, then the raised-load replay, the incumbent, the simplest).
- ``best-no-bound``: the best mean validation objective among all candidates (no bound, no tie-break).
- ``best-in-bound``: rules 1-2 only (the bound as shipped), then the best mean validation objective (no tie-break).

``python3 results/tune/unseen-session19/alt_rules.py EVAL.json ...``

Written after the first four unseen histories (A-D) showed the shipped rule WORSE in 7 of 8 cells; the
hypotheses it tests were written down before the second batch (E-H) ran (README.md, "Out of sample").
"""

from __future__ import annotations

import json
import sys

from slurm_plugin.tune.select import Entry, _rank
from slurm_plugin.tune.verdict import judge

RULES = ("shipped", "best-no-bound", "best-in-bound")


def picks(doc: dict, mode: str) -> dict[str, str]:
    sel = doc["selection"][mode]
    val = sel["validation"]
    rows = [r for r in doc["ranking"] if r["backfill"] == (mode == "on")]
    ents = [Entry(lab, 0.0, v["objective"], max(v["block_max_wait_s"]), tuple(v["blocks"]),
                  tuple(v["block_max_wait_s"])) for lab, v in val.items()]
    in_bound = _rank(ents, doc.get("max_wait_bound_s"), 1.0, 0.01)[0]
    return {"shipped": next(r["policy"] for r in rows if r["chosen"]),
            "best-no-bound": min(val, key=lambda k: val[k]["objective"]),
            "best-in-bound": min(in_bound, key=lambda e: e.objective).label}


def main(paths: list[str]) -> None:
    totals = {rule: {"better": 0, "tie": 0, "WORSE": 0} for rule in RULES}
    for path in paths:
        doc = json.load(open(path))
        for mode in doc["selection"]:
            rows = [r for r in doc["ranking"] if r["backfill"] == (mode == "on")]
            cells = []
            for rule, policy in picks(doc, mode).items():
                v = judge([dict(r, chosen=r["policy"] == policy) for r in rows], doc.get("max_wait_bound_s"))
                totals[rule][v.verdict] += 1
                cells.append(f"{rule}: {policy} {v.tuned.avg_bsld:.2f} {v.verdict} {v.gain_pct:+.1f} %")
            print(f"{doc['workload']} backfill {mode}: " + "; ".join(cells))
    for rule, t in totals.items():
        print(f"{rule}: {t['better']} better, {t['tie']} tie, {t['WORSE']} WORSE")


if __name__ == "__main__":
    main(sys.argv[1:])
