"""fine_tune (the tuner's "dqn fine-tuned" candidate): a loadable model whose weights moved, the same result
for the same seed, the start model's gate kept, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from slurm_plugin.rank.dqn.model import DEFAULT_MODEL, load_model, save_model
from slurm_plugin.sim.machine import homogeneous
from slurm_plugin.workload.lublin import LublinSpec, generate_lublin

pytest.importorskip("torch", reason="torch is the 'train' extra, not installed")


@pytest.fixture(scope="module")
def site_jobs():
    return generate_lublin(LublinSpec(nodes=32, jobs=300, seed=9, load=1.2)).jobs


def test_fine_tune_returns_a_loadable_model_with_changed_weights(site_jobs, tmp_path):
    from slurm_plugin.training.finetune import fine_tune
    start = load_model(DEFAULT_MODEL)
    model = fine_tune(None, site_jobs, homogeneous(32, 1), budget_s=2.0, seed=1)
    back = load_model(save_model(model, tmp_path / "ft.npz"))
    assert any(not np.array_equal(a, b) for a, b in zip(back.weights + back.biases, start.weights + start.biases))
    assert back.meta["backlog_gate"] == start.meta["backlog_gate"]
    info = back.meta["fine_tune"]
    assert info["jobs"] == 300 and info["episodes_run"] >= 1 and info["start_model"] == str(DEFAULT_MODEL)
    assert info["val_ratio"] > 0 and info["start_val_ratio"] > 0


def test_fine_tune_is_deterministic_for_a_seed(site_jobs):
    from slurm_plugin.training.finetune import fine_tune
    # 1 s plans one episode: the clock cannot cut it short, however loaded the host
    a = fine_tune(None, site_jobs, homogeneous(32, 1), budget_s=1.0, seed=3)
    b = fine_tune(None, site_jobs, homogeneous(32, 1), budget_s=1.0, seed=3)
    assert a.meta["fine_tune"]["episodes_planned"] == 1 and not a.meta["fine_tune"]["stopped_early"]
    for x, y in zip(a.weights + a.biases, b.weights + b.biases):
        np.testing.assert_array_equal(x, y)


def test_fine_tune_refuses_bad_input(site_jobs):
    from slurm_plugin.training.finetune import fine_tune, planned_episodes
    with pytest.raises(ValueError, match="budget"):
        fine_tune(None, site_jobs, homogeneous(32, 1), budget_s=0, seed=1)
    with pytest.raises(ValueError, match="at least"):
        fine_tune(None, site_jobs.take(np.arange(5)), homogeneous(32, 1), budget_s=2, seed=1)
    assert planned_episodes(120, 256) == 50 and planned_episodes(1, 256) == 1


def test_rank_heldout_compares_the_fine_tuned_model(tmp_path):
    import json

    from click.testing import CliRunner

    from slurm_plugin.cli import main
    out = tmp_path / "h.json"
    res = CliRunner().invoke(main, ["rank", "heldout", "-w", "lublin:nodes=32,jobs=300,seed=9,load=1.2",
                                    "--policy", "sjf", "--warmup", "20", "--fine-tune-s", "1", "--output", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert {r["policy"] for r in doc["rows"]} == {"dqn", "dqn-ft", "sjf"}
    assert doc["fine_tuned"]["lublin:nodes=32,jobs=300,seed=9,load=1.2"]["episodes_planned"] == 1
