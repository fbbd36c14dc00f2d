"""Evaluation rows as a markdown table and a bar plot (bsld and max wait side by side)."""

from __future__ import annotations

import re
from pathlib import Path


def _label(r: dict) -> str:
    floor = f"+floor{r['age_floor_h']:g}h" if r.get("age_floor_h") is not None else ""
    return f"{r['policy']}{floor}"


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(plt, fig, path: str | Path) -> None:
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _md(header: list[str], body: list[list[str]]) -> list[str]:
    """Markdown table lines."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in body]


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def table(rows: list[dict]) -> str:
    return "\n".join(_md(["policy", "backfill", "avg bsld", "avg wait s", "max wait h", "util"],
                         [[_label(r), _yes(r["backfill"]), f"{r['avg_bsld']:.2f}", f"{r['avg_wait_s']:.0f}",
                           f"{r['max_wait_s'] / 3600:.1f}", f"{r['utilization']:.3f}"] for r in rows]))


def plot_rows(rows: list[dict], path: str | Path, title: str) -> None:
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    labels = [f"{_label(r)}\n{'bf' if r['backfill'] else 'no bf'}" for r in rows]
    colors = ["tab:red" if r["policy"] == "dqn" else "tab:gray" for r in rows]
    axes[0].bar(range(len(rows)), [r["avg_bsld"] for r in rows], color=colors)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("avg bounded slowdown (log)")
    axes[1].bar(range(len(rows)), [r["max_wait_s"] / 3600 for r in rows], color=colors)
    axes[1].set_ylabel("max wait (h)")
    for ax in axes:
        ax.set_xticks(range(len(rows)), labels, rotation=90, fontsize=6)
    fig.suptitle(title)
    _save(plt, fig, path)


def heldout_table(rows: list[dict], summary: list[dict]) -> str:
    """Held-back results: one line per (workload, backfill), a column per policy (avg bsld), then each learned
    model against the best heuristic."""
    pols = list(dict.fromkeys(r["policy"] for r in rows))
    body = []
    for key in dict.fromkeys((r["workload"], r["backfill"]) for r in rows):
        cell = {r["policy"]: r["avg_bsld"] for r in rows if (r["workload"], r["backfill"]) == key}
        body.append([key[0], _yes(key[1])] + [f"{cell[p]:.2f}" if p in cell else "" for p in pols])
    best = [[s["policy"], s["workload"], _yes(s["backfill"]), f"{s['avg_bsld']:.2f}", s["best_heuristic"],
             f"{s['best_avg_bsld']:.2f}", f"{s['ratio']:.3f}"] for s in summary]
    return "\n".join(_md(["workload", "backfill", *pols], body) + [""]
                     + _md(["model", "workload", "backfill", "bsld", "best heuristic", "its bsld", "ratio"], best))


def plot_ratios(rows: list[dict], path: str | Path, title: str) -> None:
    """Grouped bars: per (workload, backfill), each policy's avg bsld divided by SJF's (log scale)."""
    plt = _pyplot()
    keys = list(dict.fromkeys((r["workload"], r["backfill"]) for r in rows))
    pols = list(dict.fromkeys(r["policy"] for r in rows))
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(keys)), 4.5))
    width = 0.8 / len(pols)
    for i, pol in enumerate(pols):
        vals = []
        for key in keys:
            cell = {r["policy"]: r["avg_bsld"] for r in rows if (r["workload"], r["backfill"]) == key}
            vals.append(cell.get(pol, float("nan")) / cell["sjf"] if "sjf" in cell else float("nan"))
        ax.bar([k + i * width for k in range(len(keys))], vals, width, label=pol)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("avg bsld / SJF's (log)")
    short = [f"{re.sub(r'jobs=[0-9]+,', '', w.split('/')[-1].split('.swf')[0].split(',jitter')[0])[:28]}\n"
             f"{'bf' if bf else 'no bf'}" for w, bf in keys]
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(keys))], short, rotation=90, fontsize=6)
    ax.legend(fontsize=7, ncol=len(pols))
    ax.set_title(title)
    _save(plt, fig, path)
