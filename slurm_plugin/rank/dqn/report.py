"""Evaluation rows as a markdown table and a bar plot (bsld and max wait side by side)."""

from __future__ import annotations

from pathlib import Path


def _label(r: dict) -> str:
    floor = f"+floor{r['age_floor_h']:g}h" if r.get("age_floor_h") is not None else ""
    return f"{r['policy']}{floor}"


def table(rows: list[dict]) -> str:
    lines = ["| policy | backfill | avg bsld | avg wait s | max wait h | util |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {_label(r)} | {'yes' if r['backfill'] else 'no'} | {r['avg_bsld']:.2f} | "
                     f"{r['avg_wait_s']:.0f} | {r['max_wait_s'] / 3600:.1f} | {r['utilization']:.3f} |")
    return "\n".join(lines)


def plot_rows(rows: list[dict], path: str | Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
