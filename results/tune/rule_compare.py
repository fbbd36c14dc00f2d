"""Rule 3 with and without the consistency clause (session 10) on evaluation JSONs, no replay: per backfill
mode, the choice each rule makes from the same validation entries (and raised-load entries, rule 4a), its
held-back avg bsld and its verdict against the best fixed heuristic within the bound.

``python3 results/tune/rule_compare.py EVAL.json ...`` (``hetsched tune --evaluate T --output EVAL.json``, made
with the amended rule: its raised-load replays cover every candidate tied under either rule, since a tie under
the session-9 rule is a tie under the amended one). A choice among tied candidates without raised-load entries
for all of them is marked ``?``: the run did not replay them at raised load (rule 4a might have chosen
another), or their validation part was at the raised load already.
"""

from __future__ import annotations

import json
import sys

from slurm_plugin.tune.candidates import COMPLEXITY
from slurm_plugin.tune.select import Entry, choose
from slurm_plugin.tune.verdict import judge


def _entry(lab: str, v: dict, complexity: float) -> Entry:
    return Entry(lab, complexity, v["objective"], max(v["block_max_wait_s"]), tuple(v["blocks"]),
                 tuple(v["block_max_wait_s"]))


def _complexity(row: dict) -> float:
    return float(COMPLEXITY[row["ranking"]["name"]]) + (1.0 if row["family"] == "finetuned" else 0.0)


def compare(doc: dict) -> list[str]:
    out = []
    for mode, sel in doc["selection"].items():
        rows = [r for r in doc["ranking"] if r["backfill"] == (mode == "on")]
        cx = {r["policy"]: _complexity(r) for r in rows}
        ents = [_entry(lab, v, cx[lab]) for lab, v in sel["validation"].items()]
        stressed = [_entry(lab, v, cx[lab]) for lab, v in sel.get("stressed", {}).items()]
        picks = {}
        for name, cons in (("session 9", False), ("amended", True)):
            ch = choose(ents, doc["max_wait_bound_s"], stressed=stressed, stress_factor=doc.get("stress_factor"),
                        incumbent=doc.get("incumbent"), consistency=cons)
            unknown = len(ch.tied) > 1 and not set(ch.tied) <= {e.label for e in stressed}
            v = judge([{**r, "chosen": r["policy"] == ch.winner} for r in rows], doc["max_wait_bound_s"])
            picks[name] = (ch.winner, ch.decided_by, v, unknown)
        if sel["winner"] not in {w for w, *_ in picks.values()}:
            out.append(f"{doc['workload']} {mode}: neither rule recomputes the run's choice {sel['winner']}")
        for name, (win, by, v, unknown) in picks.items():
            out.append(f"| {doc['workload']} | {mode} | {name} | {win} | {by} | {v.tuned.avg_bsld:.4g} | "
                       f"{v.comparator.policy} {v.comparator.avg_bsld:.4g} | {v.gain_pct:+.1f}% | "
                       f"{v.verdict}{' ?' if unknown else ''} |")
    return out


def main(paths: list[str]) -> None:
    print("| trace | backfill | rule | choice | decided by | held-back avg bsld | judged against | gain | verdict |")
    print("|" + "---|" * 9)
    for p in paths:
        print("\n".join(compare(json.load(open(p)))))


if __name__ == "__main__":
    main(sys.argv[1:])
