"""Average JCT and wait per policy on every stream of one run (results/dag/eval-all.json, written by
`hetsched dag eval --stream ...`): results/dag/dag-eval.png, one bar group per stream, log scale."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).parent
doc = json.loads((HERE / "eval-all.json").read_text())
streams = [s["label"] for s in doc["streams"]]
policies = list(dict.fromkeys(r["policy"] for r in doc["rows"]))
value = {(r["stream"], r["policy"]): r for r in doc["rows"]}
fig, axes = plt.subplots(2, 1, figsize=(16, 9), sharex=True)
width = 0.8 / len(policies)
for ax, key in zip(axes, ("avg_jct_s", "avg_wait_s")):
    for i, p in enumerate(policies):
        ax.bar([k + i * width for k in range(len(streams))], [value[s, p][key] for s in streams], width, label=p)
    ax.set_yscale("log")
    ax.set_ylabel(key.replace("_", " "))
axes[1].set_xticks([k + 0.4 - width / 2 for k in range(len(streams))],
                   [s.replace("decima_tpch_dags tpch-100", "TPC-H").replace(" seed", "\nseed") for s in streams],
                   fontsize=7, rotation=30, ha="right")
axes[0].legend(fontsize=8, ncol=len(policies))
prov = doc["provenance"]
axes[0].set_title(f"hetsched dag eval, one run: commit {prov['git_commit'][:7]}, {prov['cpu_model']} x{prov['nproc']}")
fig.tight_layout()
fig.savefig(HERE / "dag-eval.png", dpi=100)
print(HERE / "dag-eval.png")
