"""Bar plots of average JCT and wait per policy and load, one panel per workload: results/dag/dag-eval.png."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).parent
WORKLOADS = (("tpch", "TPC-H (Decima), 100 cores"), ("pipelines-demo", "render/ML pipelines, demo site"),
             ("pipelines-large", "render/ML pipelines, large site"))
LOADS = ("0.5", "0.9")

fig, axes = plt.subplots(2, len(WORKLOADS), figsize=(15, 7), squeeze=False)
for col, (prefix, title) in enumerate(WORKLOADS):
    docs = [json.loads((HERE / f"{prefix}-load{load}.json").read_text()) for load in LOADS
            if (HERE / f"{prefix}-load{load}.json").exists()]
    if not docs:
        continue
    policies = [r["policy"] for r in docs[0]["rows"]]
    width = 0.8 / len(policies)
    for row, key in enumerate(("avg_jct_s", "avg_wait_s")):
        ax = axes[row][col]
        for i, p in enumerate(policies):
            vals = [next(r[key] for r in d["rows"] if r["policy"] == p) for d in docs]
            ax.bar([k + i * width for k in range(len(docs))], vals, width, label=p)
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(docs))], [f"load {d['load']}" for d in docs])
        ax.set_yscale("log")
        ax.set_ylabel(key.replace("_", " "))
        if row == 0:
            ax.set_title(title)
axes[0][0].legend(fontsize=8)
fig.tight_layout()
fig.savefig(HERE / "dag-eval.png", dpi=110)
print(HERE / "dag-eval.png")
