"""`hetsched rank eval` / `hetsched bench rank` write the issue's result keys; `dqn` is a simulator ranking."""

from __future__ import annotations

import json

from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.sim.hooks import ranking

ROW_KEYS = {"workload", "backfill", "policy", "avg_bsld", "avg_wait_s", "utilization", "max_wait_s"}
POLICIES = {"dqn", "fcfs", "sjf", "wfp3", "unicep", "f1", "multifactor"}


def test_rank_eval_json_has_the_issue_keys(workloads, tmp_path):
    out = tmp_path / "ev.json"
    res = CliRunner().invoke(main, ["rank", "eval", "-w", str(workloads / "swf" / "lublin_256.swf"), "--sequences",
                                    "2", "--length", "32", "--age-floor", "24", "--output", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["protocol"]["semantics"] == "slurm" and doc["protocol"]["sequences"] == 2
    assert {(r["policy"], r["backfill"]) for r in doc["rows"]} == {(p, b) for p in POLICIES for b in (False, True)}
    assert all(ROW_KEYS <= set(r) and r["avg_bsld"] >= 1.0 for r in doc["rows"])
    assert {r["policy"] for r in doc["floor_rows"]} == POLICIES and all(r["age_floor_h"] == 24 for r in doc["floor_rows"])
    assert "| dqn | yes |" in res.output


def test_rank_eval_rejects_a_missing_model(workloads, tmp_path):
    res = CliRunner().invoke(main, ["rank", "eval", "-w", str(workloads / "swf" / "lublin_256.swf"), "--model",
                                    str(tmp_path / "none.npz"), "--output", str(tmp_path / "x.json")])
    assert res.exit_code == 1 and "no such model file" in res.output


def test_bench_rank_json(tmp_path):
    out = tmp_path / "b.json"
    res = CliRunner().invoke(main, ["bench", "rank", "--jobs", "1000", "--repeat", "2", "--output", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["jobs"] == 1000 and doc["rank_ms"] > 0


def test_dqn_is_a_registered_simulator_ranking():
    r = ranking("dqn", None, 256.0)
    assert r.name == "dqn" and r.static is False


def test_rank_record_stores_eval_figures_in_the_model(workloads, tmp_path):
    from slurm_plugin.rank.dqn import DqnModel, load_model, save_model
    model = save_model(DqnModel.init(seed=4), tmp_path / "m.npz")
    out = tmp_path / "ev.json"
    args = ["rank", "eval", "-w", str(workloads / "swf" / "lublin_256.swf"), "--model", str(model), "--sequences", "1",
            "--length", "16", "--output", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 0
    res = CliRunner().invoke(main, ["rank", "record", "--model", str(model), str(out)])
    assert res.exit_code == 0, res.output
    m = load_model(model)
    rows = m.meta["evaluations"]["ev"]["rows"]
    assert len(rows) == 14 and {"policy", "avg_bsld", "max_wait_s", "backfill"} <= set(rows[0])
    np_equal = all((a == b).all() for a, b in zip(m.weights, DqnModel.init(seed=4).weights))
    assert np_equal


def test_sim_run_and_compare_take_the_dqn_and_its_model(tmp_path, monkeypatch):
    from slurm_plugin.rank.dqn import DqnModel, save_model
    from slurm_plugin.rank.dqn.policy import MODEL_ENV
    monkeypatch.setenv(MODEL_ENV, "")  # recorded, so the undo removes what --model sets in this process
    monkeypatch.delenv(MODEL_ENV)  # (delenv alone records nothing when the variable is absent: it leaked)
    model = save_model(DqnModel.init(seed=4), tmp_path / "m.npz")
    w = ["-w", "synthetic:jobs=150,seed=1,load=0.9", "--site", "demo"]
    res = CliRunner().invoke(main, ["sim", "run", *w, "--policy", "dqn", "--model", str(model),
                                    "--output", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r.json").read_text())["policy"] == "dqn"
    res = CliRunner().invoke(main, ["sim", "compare", *w, "--policies", "sjf,dqn", "--backfill", "on", "--model",
                                    str(model), "--output", str(tmp_path / "c.json")])
    assert res.exit_code == 0, res.output
    assert [r["policy"] for r in json.loads((tmp_path / "c.json").read_text())["rows"]] == ["sjf", "dqn"]
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a model")
    res = CliRunner().invoke(main, ["sim", "run", *w, "--policy", "dqn", "--model", str(bad)])
    assert res.exit_code != 0 and "not a readable model" in res.output
