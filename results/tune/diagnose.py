"""Why a tuned choice lost on the held-back part: read an evaluation JSON (``hetsched tune --evaluate T --json F``)
and print, per backfill mode, what selection saw and what happened held back.

``python3 results/tune/diagnose.py results/tune/KTH-SP2-1996-2.1-cln.json``

Per mode: the choice, the best fixed ranking in hindsight (the evaluation's comparator, which ignores the max-wait
bound), the candidates within the bound on validation (rule 1) and the best of *them* held back (the best any rule
choosing among them could have done), the rank correlation between validation objective and held-back avg bsld
among them (does validation order predict held-back order?), and the block-to-block noise of the paired
difference between the choice and the best feasible one held back (mean and standard error over the validation
blocks, in % of the choice's objective), and the verdict under the fair comparison
(:mod:`slurm_plugin.tune.verdict`: against the best fixed heuristic that keeps the bound on the held-back part).
"""

from __future__ import annotations

import json
import sys

import numpy as np

from slurm_plugin.tune.verdict import judge


def spearman(a, b) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1]) if len(a) > 2 else float("nan")


def mode_report(doc: dict, mode: str) -> list[str]:
    sel, bound = doc["selection"][mode], doc["max_wait_bound_s"]
    bf = mode == "on"
    held = {r["policy"]: r for r in doc["ranking"] if r["backfill"] == bf}
    val = sel["validation"]
    n = len(next(iter(val.values()))["block_max_wait_s"])
    binding = [k for k in range(n) if any(v["block_max_wait_s"][k] <= bound for v in val.values())]
    feas = [lab for lab, v in val.items() if all(v["block_max_wait_s"][k] <= bound for k in binding)] or list(val)
    fixed = {p: r for p, r in held.items() if r.get("family") == "fixed"}
    best_fixed = min(fixed, key=lambda p: fixed[p]["avg_bsld"])
    win = sel["winner"]
    feas_held = [lab for lab in feas if lab in held]
    best_feas = min(feas_held, key=lambda p: held[p]["avg_bsld"])
    rho = spearman([val[p]["objective"] for p in feas_held], [held[p]["avg_bsld"] for p in feas_held])
    rho_all = spearman([val[p]["objective"] for p in val if p in held], [held[p]["avg_bsld"] for p in val if p in held])
    rank = sorted(feas_held, key=lambda p: val[p]["objective"]).index(best_feas) + 1
    d = np.asarray(val[best_feas]["blocks"]) - np.asarray(val[win]["blocks"])
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    scale = val[win]["objective"]
    w, bfx = held[win]["avg_bsld"], fixed[best_fixed]["avg_bsld"]
    drop = next((d for d in (doc.get("halving") or {}).get("dropped", [])
                 if d["label"] == best_fixed and d["backfill"] == bf), None)
    if best_fixed in val:
        where = (f"on validation {'within' if best_fixed in feas else 'OVER'} the bound {bound:.0f} s in the "
                 f"{len(binding)} binding block(s)")
    elif drop:
        where = f"not on validation: the halving dropped it at rung {drop['rung'] + 1} ({drop['jobs']} jobs; {drop['reason']})"
    else:
        where = "not on validation"
    out = [f"backfill {mode}: chosen {win} ({sel['decided_by']}): held-back avg bsld {w:.2f}; best fixed in hindsight "
           f"{best_fixed} {bfx:.2f} (max wait {fixed[best_fixed]['max_wait_s']:.0f} s; {where});"
           f" tuned vs it {100 * (w / bfx - 1):+.1f} %",
           f"  within the bound on validation: {len(feas)} of {len(val)}; the best of them held back: {best_feas} "
           f"{held[best_feas]['avg_bsld']:.2f} ({100 * (held[best_feas]['avg_bsld'] / bfx - 1):+.1f} % vs {best_fixed}),"
           f" ranked {rank} of {len(feas_held)} on validation",
           f"  within the bound and better than {best_fixed} held back: "
           + (", ".join(f"{p} {held[p]['avg_bsld']:.2f}" for p in feas_held if held[p]['avg_bsld'] < bfx) or "none"),
           f"  Spearman(validation objective, held-back avg bsld): {rho:+.2f} within the bound, {rho_all:+.2f} all",
           f"  paired block difference {best_feas} - {win}: {100 * d.mean() / scale:+.1f} % +- {100 * se / scale:.1f} % "
           f"(1 SE over {len(d)} blocks; per block {', '.join(f'{100 * x / scale:+.0f} %' for x in d)})"]
    v = judge(list(held.values()), bound)
    out.append(f"  verdict (fair comparison): {v.text()}")
    return out


def main(argv: list[str]) -> int:
    for path in argv:
        doc = json.loads(open(path).read())
        print(path)
        for mode in ("on", "off"):
            if mode in doc["selection"]:
                print("\n".join(mode_report(doc, mode)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
