"""``hetsched tune`` end to end on a small SWF history (real files, real simulator), and its input errors."""

import json

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.policy import load_policy


JOBS = 150  # the swf fixture's (conftest.py)
FAST = ["-j", "1", "--candidates", "fcfs,sjf,multifactor", "--no-power", "--dqn-budget", "0"]  # few replays: tests stay fast


def test_tune_writes_a_policy_file_the_cycle_loads_and_keeps_the_previous(swf, tmp_path):
    out = tmp_path / "policy.yaml"
    res = CliRunner().invoke(main, ["tune", "--history", str(swf), "--out", str(out), "--explain", *FAST])
    assert res.exit_code == 0, res.output
    assert "WINNER" in res.stdout and "(shipped default)" in res.stdout
    spec = load_policy(out)
    assert spec.twin.objective == "avg_bsld" and spec.twin.previous is None
    assert spec.twin.history.jobs == JOBS and spec.twin.predicted.avg_bsld >= 1.0
    assert spec.twin.runner_up.ranking and spec.twin.runner_up.backfill is True
    assert spec.twin.why.startswith("objective ")  # the selection's reason, kept for whoever reads the file
    first = out.read_text()
    res = CliRunner().invoke(main, ["tune", "--history", str(swf), "--out", str(out), "--json", *FAST])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    again = load_policy(out)
    assert again.twin.previous and open(again.twin.previous).read() == first
    assert doc["policy_file"] == str(out) and doc["chosen"] != doc["runner_up"]


def test_power_is_tuned_under_the_chosen_ranking_and_written(swf, tmp_path):
    out = tmp_path / "policy.yaml"
    res = CliRunner().invoke(main, ["tune", "--history", str(swf), "--out", str(out), "-j", "1",
                                    "--candidates", "sjf"])
    assert res.exit_code == 0, res.output
    assert "power (backfill on, under the chosen ranking)" in res.stdout and "SuspendTime" in res.stdout
    spec = load_policy(out)
    assert spec.scaling.name in ("idle-timer", "planner") and spec.twin.predicted.energy_kwh > 0


def test_tune_replays_only_the_sites_suspend_time(swf, tmp_path):
    """Only the site's SuspendTime decides the scaling section, so `tune` (not --evaluate) matches only it: the
    timer, its matched timer and the planner's prices, not the evaluation table's five timers."""
    res = CliRunner().invoke(main, ["tune", "--history", str(swf), "--json", "-j", "1", "--candidates", "sjf",
                                    "--dqn-budget", "0"])
    assert res.exit_code == 0, res.output
    power = json.loads(res.stdout)["power"]
    assert [m["suspend_time_s"] for m in power["timers"]] == [power["suspend_time_s"]] == [300.0]


def test_halving_halves_the_power_candidates_too_and_the_json_says_so(swf):
    """--halving reaches the power sweep: its rungs, drops and CPU per phase are in the tune JSON beside the
    ranking halving's."""
    res = CliRunner().invoke(main, ["tune", "--history", str(swf), "--json", "-j", "1", "--candidates", "sjf",
                                    "--dqn-budget", "0", "--halving"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert len(doc["halving"]["rungs"]) == 2 and any(k.startswith("halving rung 1") for k in doc["replay_cpu_s"])
    power = doc["power"]
    assert [r["replays"] for r in power["halving"]["rungs"]][0] == len(power["timers"]) + 3  # timer, matched, 2 prices
    assert any(k.startswith("power: halving rung 2") for k in power["replay_cpu_s"])
    res = CliRunner().invoke(main, ["tune", "--history", str(swf), "--json", "-j", "1", "--candidates", "sjf",
                                    "--dqn-budget", "0", "--no-halving"])
    doc = json.loads(res.stdout)
    assert doc["halving"] is None and doc["power"]["halving"] is None


def test_evaluate_writes_the_issue_format(swf, tmp_path):
    out = tmp_path / "eval.json"
    res = CliRunner().invoke(main, ["tune", "--evaluate", str(swf), "--output", str(out), "--explain", *FAST])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    # the verdict against the best fixed heuristic within the held-back max-wait bound, in the JSON and shown
    for mode in ("on", "off"):
        v = doc["verdict"][mode]
        fixed = {r["policy"] for r in doc["ranking"] if r["backfill"] == (mode == "on") and r["family"] == "fixed"}
        assert v["verdict"] in ("better", "tie", "WORSE") and v["comparator"]["policy"] in fixed
        assert f"verdict, backfill {mode}: {v['text']}" in res.stdout
    assert doc["split"]["tune_jobs"] + doc["split"]["test_jobs"] == JOBS
    assert {r["backfill"] for r in doc["ranking"]} == {True, False}
    for row in doc["ranking"]:
        assert {"policy", "backfill", "avg_bsld", "avg_wait_s", "max_wait_s", "chosen"} <= set(row)
    for bf in (True, False):
        rows = [r for r in doc["ranking"] if r["backfill"] == bf]
        assert sum(r["chosen"] for r in rows) == 1
        assert {"fcfs", "sjf+floor", "multifactor+floor"} <= {r["policy"] for r in rows}
    assert isinstance(doc["power"], list)
    # rolling-origin validation: the weighted family refitted before each block, every candidate judged per block
    sel, folds = doc["selection"]["on"], doc["split"]["validation_blocks"]
    assert folds == 4 and len(sel["fitted_at"]) == folds and len(doc["split"]["rolling_origins"]) == folds + 1
    for lab, v in sel["validation"].items():
        assert len(v["blocks"]) == folds and v["objective"] == pytest.approx(sum(v["blocks"]) / folds)
    assert doc["fidelity"]["checked"] is False  # the fixture records no waits
    assert doc["bound_price"] == 1.5 and "unless keeping it costs over 1.5x the best objective" in doc["rule"]


def test_bound_price_inf_keeps_the_bound_at_any_price_and_below_one_is_a_usage_error(swf, tmp_path):
    out = tmp_path / "eval.json"
    res = CliRunner().invoke(main, ["tune", "--evaluate", str(swf), "--output", str(out), "--bound-price", "inf",
                                    "--no-packing", *FAST])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["bound_price"] is None and "costs over" not in doc["rule"]
    res = CliRunner().invoke(main, ["tune", "--evaluate", str(swf), "--bound-price", "0.9"])
    assert res.exit_code == 2 and "--bound-price" in res.output


def test_missing_history_names_the_file(tmp_path):
    res = CliRunner().invoke(main, ["tune", "--history", str(tmp_path / "nope.txt")])
    assert res.exit_code == 2 and "nope.txt: no such history file" in res.output


def test_a_lublin_model_history_is_read_not_looked_up_as_a_file():
    res = CliRunner().invoke(main, ["tune", "--evaluate", "lublin:nodes=1,jobs=10"])
    assert res.exit_code == 2 and "no such history file" not in res.output and "nodes" in res.output


def test_bad_sacct_export_names_file_and_field(tmp_path):
    bad = tmp_path / "hist.txt"
    bad.write_text("JobID|Submit|Start\n1|2026-01-01T00:00:00|2026-01-01T00:01:00\n")
    res = CliRunner().invoke(main, ["tune", "--site", "demo", "--history", str(bad)])
    assert res.exit_code == 2 and "hist.txt" in res.output and "lacks End, Timelimit, NNodes, NCPUS" in res.output


def test_unknown_format_and_missing_choice_are_usage_errors(tmp_path):
    odd = tmp_path / "hist.xyz"
    odd.write_text("x\n")
    res = CliRunner().invoke(main, ["tune", "--history", str(odd)])
    assert res.exit_code == 2 and "hist.xyz" in res.output and "unknown workload kind" in res.output
    res = CliRunner().invoke(main, ["tune"])
    assert res.exit_code == 2 and "--history" in res.output
    res = CliRunner().invoke(main, ["tune", "--history", str(odd), "--candidates", "sjf,lifo"])
    assert res.exit_code == 2 and "unknown ranking(s) lifo" in res.output


def test_power_is_tuned_in_the_sites_backfill_mode(swf, tmp_path):
    """A site without backfill gets its power section from replays without backfill (the sweep once ran with
    backfill on whatever the site ran, and a --no-backfill site got no power section at all)."""
    from slurm_plugin.sim.run import prepare
    from slurm_plugin.tune.power import tune_power
    from slurm_plugin.tune.split import split_history

    out = tmp_path / "policy.yaml"
    res = CliRunner().invoke(main, ["tune", "--history", str(swf), "--out", str(out), "--no-backfill", "--json",
                                    "-j", "1", "--candidates", "sjf"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["power"]["backfill"] is False
    spec = load_policy(out)
    p = prepare(str(swf))
    off = tune_power(p, split_history(p.workload.jobs), spec.ranking, jobs=1, backfill=False)
    on = tune_power(p, split_history(p.workload.jobs), spec.ranking, jobs=1, backfill=True, timers=(), grid=(),
                    prices=())  # the site's timer alone: the two modes differ on this history
    assert on.rows()[0]["avg_wait_s"] != next(r for r in off.rows() if r["param"] == on.rows()[0]["param"])["avg_wait_s"]
    assert spec.twin.predicted.energy_kwh == pytest.approx(off.test[off.chosen].energy_kwh)
    assert doc["power"]["scaling"] == off.as_dict()["scaling"]
