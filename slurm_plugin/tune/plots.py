"""The evaluation's figure: held-back average bounded slowdown of every ranking, backfill on and off, the
tuned choice marked (matplotlib, imported on use)."""

from __future__ import annotations

from pathlib import Path


def plot_evaluation(doc: dict, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [bf for bf in (True, False) if any(r["backfill"] == bf for r in doc["ranking"])]
    fig, axes = plt.subplots(1, len(modes), figsize=(6.5 * len(modes), 5), squeeze=False)
    for ax, bf in zip(axes[0], modes):
        rows = sorted((r for r in doc["ranking"] if r["backfill"] == bf), key=lambda r: r["avg_bsld"])
        colors = ["tab:red" if r["chosen"] else "tab:gray" if r.get("shipped_default") else "tab:blue" for r in rows]
        ax.barh([r["policy"] for r in rows], [r["avg_bsld"] for r in rows], color=colors)
        ax.set_xscale("log")
        ax.invert_yaxis()
        ax.tick_params(axis="y", labelsize=7)
        ax.set_xlabel("avg bounded slowdown, held-back 30 % (log)")
        ax.set_title(f"backfill {'on' if bf else 'off'} (red: tuned, grey: shipped default)", fontsize=9)
    fig.suptitle(f"{doc.get('workload', '')}: tuned on the first {doc['split']['tune_jobs']} jobs, scored on the "
                 f"last {doc['split']['test_jobs']}", fontsize=10)
    from ..sim.plots import save_figure

    return save_figure(fig, path, dpi=110)
