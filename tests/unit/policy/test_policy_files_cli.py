"""`sim compare` and `scale eval` take policy files (repeatable), built as `sim run --policy-file` builds them."""

from __future__ import annotations

import json

from click.testing import CliRunner

from slurm_plugin.cli import main

WORKLOAD = "synthetic:jobs=60,seed=5,load=0.8"


def _files(tmp_path):
    a, b = tmp_path / "sjf-idle.yaml", tmp_path / "fcfs-planner.yaml"
    a.write_text("ranking: {name: sjf}\npacking: {enabled: false}\nscaling: {name: idle-timer, suspend_time_s: 300}\n")
    b.write_text("ranking: {name: fcfs, age_floor: false}\npacking: {enabled: false}\n"
                 "scaling: {name: planner, wait_price_w: null, warm_nodes: 0}\n")
    return a, b


def _sim_run(f) -> dict:
    res = CliRunner().invoke(main, ["sim", "run", "--site", "demo", "-w", WORKLOAD, "--json", "--policy-file", str(f)])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_sim_compare_runs_policy_files_side_by_side_as_sim_run_does(tmp_path):
    a, b = _files(tmp_path)
    res = CliRunner().invoke(main, ["sim", "compare", "--site", "demo", "-w", WORKLOAD, "--backfill", "on", "-j", "1",
                                    "--json", "--policy-file", str(a), "--policy-file", str(b)])
    assert res.exit_code == 0, res.output
    rows = {r["policy_file"]: r for r in json.loads(res.output)["rows"]}
    assert list(rows) == ["sjf-idle.yaml", "fcfs-planner.yaml"]
    for f in (a, b):
        assert rows[f.name]["metrics"] == _sim_run(f)["metrics"]
    assert rows["sjf-idle.yaml"]["metrics"] != rows["fcfs-planner.yaml"]["metrics"]


def test_sim_compare_refuses_policy_files_with_the_options_they_replace(tmp_path):
    a, _ = _files(tmp_path)
    res = CliRunner().invoke(main, ["sim", "compare", "-w", WORKLOAD, "--policies", "sjf", "--policy-file", str(a)])
    assert res.exit_code == 2 and "--policy-file replaces --policies" in res.output, res.output
    (tmp_path / "bad.yaml").write_text("steps: [rank, nope]\n")
    res = CliRunner().invoke(main, ["sim", "compare", "-w", WORKLOAD, "--policy-file", str(a),
                                    "--policy-file", str(tmp_path / "bad.yaml")])
    assert res.exit_code == 2 and "bad.yaml: steps[1]: unknown step 'nope'" in res.output, res.output


def test_scale_eval_adds_a_row_per_policy_file(tmp_path):
    a, b = _files(tmp_path)
    out = tmp_path / "eval.json"
    res = CliRunner().invoke(main, ["scale", "eval", "--site", "demo", "-w", WORKLOAD, "--output", str(out),
                                    "--policy-file", str(a), "--policy-file", str(b)])
    assert res.exit_code == 0, res.output
    rows = {r["policy"]: r for r in json.loads(out.read_text())["rows"]}
    assert {"always-on", "hetsched", "sjf-idle.yaml", "fcfs-planner.yaml"} <= set(rows)
    for f in (a, b):
        assert rows[f.name]["energy_kwh"] == _sim_run(f)["metrics"]["energy_kwh"]
        assert rows[f.name]["energy_vs_always_on"] is not None
