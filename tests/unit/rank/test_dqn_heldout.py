"""The held-back protocol: warm-up + the last 30 % simulated whole, only the held-back jobs scored; the
`hetsched rank heldout` command writes rows and the learned-vs-best-heuristic summary."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.rank.dqn.model import DEFAULT_MODEL
from slurm_plugin.training.heldout import held_back_run, versus_best
from slurm_plugin.tune.split import split_history
from slurm_plugin.workload.lublin import LublinSpec, generate_lublin


def test_held_back_run_scores_only_the_last_part_after_a_warmup():
    jobs = generate_lublin(LublinSpec(nodes=32, jobs=1000, seed=2)).jobs
    cut = split_history(jobs).boundary
    sub, scored = held_back_run(jobs, warmup=100)
    assert len(sub) == len(jobs) - cut + 100 and scored.sum() == len(jobs) - cut and not scored[:100].any()
    assert sub.submit[0] == 0 and np.array_equal(sub.run[100:], jobs.run[cut:])
    sub, scored = held_back_run(jobs, warmup=10_000, max_test_jobs=50)
    assert len(sub) == cut + 50 and scored.sum() == 50


def test_versus_best_picks_the_best_heuristic_per_cell():
    rows = [{"workload": "w", "backfill": True, "policy": p, "avg_bsld": b}
            for p, b in (("dqn", 3.0), ("sjf", 2.0), ("f1", 2.5))]
    [s] = versus_best(rows, "dqn", ("sjf", "f1"))
    assert s["best_heuristic"] == "sjf" and s["ratio"] == 1.5


def test_rank_heldout_cli(tmp_path):
    out = tmp_path / "h.json"
    res = CliRunner().invoke(main, ["rank", "heldout", "-w", "lublin:nodes=32,jobs=400,seed=4,load=1.0",
                                    "--model", f"old={DEFAULT_MODEL}", "--policy", "sjf", "--policy", "fcfs",
                                    "--warmup", "50", "--output", str(out), "--plot", str(tmp_path / "h.png")])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert {(r["policy"], r["backfill"]) for r in doc["rows"]} == {(p, b) for p in ("old", "sjf", "fcfs")
                                                                   for b in (True, False)}
    assert all(r["test_jobs"] == 120 and r["warmup_jobs"] == 50 and r["avg_bsld"] >= 1 for r in doc["rows"])
    assert len(doc["versus_best_heuristic"]) == 2 and (tmp_path / "h.png").stat().st_size > 0
    assert "| old | lublin:nodes=32" in res.output
