"""Render Grafana dashboard panels from a real Prometheus (query_range) with matplotlib: the README's image of
the dashboard where no Grafana can be installed. Used by tests/system/test_metrics_live.py when
``HETSCHED_PANELS_PNG`` names the file to write."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from pathlib import Path


def query_range(base: str, expr: str, start: float, end: float, step: float) -> list[dict]:
    url = f"{base}/api/v1/query_range?" + urllib.parse.urlencode(
        {"query": expr, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(url, timeout=30) as reply:
        doc = json.loads(reply.read())
    return doc["data"]["result"] if doc.get("status") == "success" else []


def legend(fmt: str, labels: dict) -> str:
    out = fmt
    for k, v in labels.items():
        out = out.replace("{{" + k + "}}", v)
    return out if "{{" not in out else str(labels)


def render(base: str, panels: list[dict], out: Path, minutes: float, step: float = 2.0) -> None:
    """Up to 6 panels over the last ``minutes`` into one PNG (``$__rate_interval`` read as 30 s)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    end = time.time()
    start = end - minutes * 60
    shown = panels[:6]
    fig, axes = plt.subplots(len(shown) // 2 + len(shown) % 2, 2, figsize=(16, 3.4 * ((len(shown) + 1) // 2)))
    for ax, panel in zip(axes.flat, shown):
        lines = []  # (label, {t: value})
        for t in panel["targets"]:
            for series in query_range(base, t["expr"].replace("$__rate_interval", "30s"), start, end, step):
                lines.append((legend(t.get("legendFormat", ""), series["metric"])[:40],
                              {float(x): float(y) for x, y in series["values"]}))
        stacked = panel["fieldConfig"]["defaults"].get("custom", {}).get("stacking", {}).get("mode") == "normal"
        if stacked and lines:  # as Grafana stacks them: on one time grid, a missing point counts 0
            grid = sorted({x for _, pts in lines for x in pts})
            ax.stackplot([(x - start) / 60 for x in grid], [[pts.get(x, 0.0) for x in grid] for _, pts in lines],
                         labels=[label for label, _ in lines], alpha=0.8)
        else:
            for label, pts in lines:
                xs = sorted(pts)
                ax.plot([(x - start) / 60 for x in xs], [pts[x] for x in xs], label=label)
        ax.set_title(panel["title"], fontsize=10)
        ax.set_xlabel("minutes", fontsize=8)
        unit = panel["fieldConfig"]["defaults"].get("unit", "")
        if unit not in ("", "short"):
            ax.set_ylabel(unit, fontsize=8)
        ax.tick_params(labelsize=8)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5), ncol=1 + len(lines) // 12)
    for ax in list(axes.flat)[len(shown):]:
        ax.axis("off")
    fig.suptitle("hetsched dashboard panels from a real Prometheus (tests/system/test_metrics_live.py)", fontsize=11)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80)
