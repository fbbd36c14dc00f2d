"""PNG plots of runs over time (queue length, utilization, power) with matplotlib (Agg, no display)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _downsample(t: np.ndarray, y: np.ndarray, points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    if len(t) <= points:
        return t, y
    idx = np.linspace(0, len(t) - 1, points).astype(int)
    return t[idx], y[idx]


def plot_timelines(runs: list[tuple[str, dict]], total_cores: int, path: str | Path, title: str = "") -> Path:
    """One figure, three panels (queue, utilization, power), one line per labelled timeline."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    for label, tl in runs:
        if not tl.get("t"):
            continue
        t = (np.asarray(tl["t"]) - tl["t"][0]) / 86400.0
        for ax, key, scale in ((axes[0], "queue", 1.0), (axes[1], "busy_cores", 100.0 / total_cores),
                               (axes[2], "watts", 1e-3)):
            x, y = _downsample(t, np.asarray(tl[key]) * scale)
            ax.plot(x, y, label=label, linewidth=0.8)
    axes[0].set_ylabel("queued jobs")
    axes[1].set_ylabel("cores busy (%)")
    axes[2].set_ylabel("power (kW)")
    axes[2].set_xlabel("days since first submit")
    axes[0].legend(fontsize=7, ncol=3)
    fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
