"""Session 22's out-of-sample test of the bound's price: the verdict of each history's choice under
``--bound-price 1.5`` (``NAME.json``) and under the rule before it (``NAME-inf.json``), judged held back by
:func:`slurm_plugin.tune.verdict.judge` (the evaluation JSON's own ``verdict``), and the counts.

``python3 results/tune/bound-price/summary.py [DIR]`` (default: this file's directory)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(folder: Path) -> None:
    totals: dict[str, dict[str, int]] = {}
    print("| history | backfill | price | choice | avg bsld | max wait s | validation objective / best | verdict | vs comparator |"
          " comparator | shipped default avg bsld |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted(folder.glob("[A-Z]-*.json")):
        price = "inf" if path.stem.endswith("-inf") else "1.5"
        doc = json.loads(path.read_text())
        name = path.stem.removesuffix("-inf")
        for mode in ("on", "off"):
            v, sel = doc["verdict"][mode], doc["selection"][mode]
            val = sel["validation"]
            free = min(x["objective"] for x in val.values())
            cost = f"{val[sel['winner']]['objective'] / free:.3g}x" if free > 0 else "-"
            default = next(r["avg_bsld"] for r in doc["ranking"]
                           if r["backfill"] == (mode == "on") and r["shipped_default"])
            print(f"| {name} | {mode} | {price} | {v['tuned']['policy']} | {v['tuned']['avg_bsld']:.2f} | "
                  f"{v['tuned']['max_wait_s']:.0f} | {cost} | {v['verdict']} | {v['gain_pct']:+.1f} % | "
                  f"{v['comparator']['policy']} {v['comparator']['avg_bsld']:.2f} | {default:.2f} |")
            t = totals.setdefault(price, {"better": 0, "tie": 0, "WORSE": 0})
            t[v["verdict"]] += 1
    print()
    for price, t in sorted(totals.items()):
        print(f"--bound-price {price}: {t['better']} better, {t['tie']} tie, {t['WORSE']} WORSE")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
