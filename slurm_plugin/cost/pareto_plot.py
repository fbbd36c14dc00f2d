"""Plot Pareto fronts (the JSON of ``hetsched cost pareto --output``): cost against job-hours, one panel per
instance, the MILP front and NSGA-II's side by side."""

from __future__ import annotations

import json
from pathlib import Path


def plot_fronts(files: list[Path], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..fsio import write_file_atomic

    docs = [json.loads(Path(f).read_text()) for f in files]
    fig, axes = plt.subplots(1, len(docs), figsize=(5 * len(docs), 4), squeeze=False)
    for ax, doc in zip(axes[0], docs):
        for p, style in zip(doc["pareto"], ("o-", "x--")):
            pts = sorted(p["front"])
            if pts:
                ax.plot([c for c, _ in pts], [j for _, j in pts], style,
                        label=f"{p['method']}: HV {p['hypervolume']:.3f}, {p['points']} pts, {p['cpu_s']:.0f} CPU s")
        ax.set_title(doc["instance"]["name"], fontsize=9)
        ax.set_xlabel("cost (plan-dependent)")
        ax.set_ylabel("job-hours (lower = faster)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return write_file_atomic(out, buf.getvalue())
