"""PNG plots of runs over time (queue length, utilization, power) with matplotlib (Agg, no display)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

BINS = 300


def binned(t: np.ndarray, y: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-weighted mean of the step function (value ``y[i]`` from ``t[i]`` to ``t[i+1]``) in each bin."""
    dt = np.diff(t, append=t[-1])
    cum = np.concatenate([[0.0], np.cumsum(y * dt)])
    area = np.interp(edges, np.append(t, t[-1] + 1e-9), cum)
    return np.diff(area) / np.maximum(np.diff(edges), 1e-12)


def plot_timelines(runs: list[tuple[str, bool, dict]], total_cores: int, path: str | Path, title: str = "") -> Path:
    """Queue, utilization and power over time (time-weighted means over 300 bins); one column per backfill
    setting, one line per policy."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = sorted({bf for _, bf, _ in runs})
    fig, axes = plt.subplots(3, len(cols), figsize=(7 * len(cols), 8), sharex=True, squeeze=False)
    t_end = max(tl["t"][-1] for _, _, tl in runs if tl.get("t"))
    t0 = min(tl["t"][0] for _, _, tl in runs if tl.get("t"))
    edges = np.linspace(t0, t_end, BINS + 1)
    mid = (edges[:-1] + edges[1:]) / 2 / 86400.0 - t0 / 86400.0
    for label, bf, tl in runs:
        if not tl.get("t"):
            continue
        t = np.asarray(tl["t"], dtype=float)
        ax = axes[:, cols.index(bf)]
        for row, key, scale in ((0, "queue", 1.0), (1, "busy_cores", 100.0 / total_cores), (2, "watts", 1e-3)):
            ax[row].plot(mid, binned(t, np.asarray(tl[key], dtype=float) * scale, edges), label=label,
                         linewidth=0.9)
    for c, bf in enumerate(cols):
        axes[0, c].set_title("EASY backfill" if bf else "no backfill")
        axes[0, c].set_ylabel("queued jobs")
        axes[1, c].set_ylabel("cores busy (%)")
        axes[2, c].set_ylabel("power (kW)")
        axes[2, c].set_xlabel("days since first submit")
        axes[0, c].legend(fontsize=7, ncol=2)
    fig.suptitle(title)
    return save_figure(fig, path, dpi=80)


def save_figure(fig, path: str | Path, dpi: int = 80) -> Path:
    """Lay out ``fig``, write it to ``path`` (parents created) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
