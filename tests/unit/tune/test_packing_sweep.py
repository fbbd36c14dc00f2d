"""The twin's packing sweep (tune/packing.py): both arms replayed under the chosen ranking, the choice (ties to
off) written into the policy file, and a history with no site model keeps the previous file's packing.

A small synthetic heterogeneous history: a 4-group site (x86 and arm CPU nodes, two GPU types) where web jobs
may run on either CPU architecture (flexible: packing may move them), and the same site with web pinned to x86
(nothing flexible: both arms replay identically)."""

import json

import pytest
import yaml
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.policy import load_policy
from slurm_plugin.sim.run import prepare
from slurm_plugin.tune.packing import arm_label, decide, tune_packing
from slurm_plugin.tune.policyfile import write_policy
from slurm_plugin.tune.select import Entry
from slurm_plugin.tune.tuner import tune_history
from slurm_plugin.policy import RankingSpec

from ..sim.test_packing import SITE_YAML

WEB_FLEXIBLE = "portable: true, archs: [x86_64, aarch64]"  # the web class in test_packing's site
assert WEB_FLEXIBLE in SITE_YAML
HISTORY = {"flex": "synthetic:jobs=400,seed=2,load=0.95",  # enough jobs that packing's moves change waits
           "pinned": "synthetic:jobs=200,seed=2,load=0.95"}
FAST = ["-j", "1", "--candidates", "fcfs,sjf", "--no-power", "--dqn-budget", "0", "--force"]


def _site(tmp_path, flexible: bool):
    path = tmp_path / f"two-{'flex' if flexible else 'pinned'}.yaml"
    path.write_text(SITE_YAML if flexible else SITE_YAML.replace(WEB_FLEXIBLE, "portable: false, archs: [x86_64]"))
    return path


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    d = tmp_path_factory.mktemp("sites")
    return {"flex": _site(d, True), "pinned": _site(d, False)}


def _sweep(sites, kind):
    result = tune_history(prepare(HISTORY[kind], str(sites[kind])), (True,), names=("fcfs", "sjf"), jobs=1, race=False)
    return result, tune_packing(result, True, jobs=1)


def test_the_sweep_replays_both_arms_under_the_chosen_ranking(sites):
    result, pt = _sweep(sites, "flex")
    assert pt.swept and pt.ranking == result.modes[True].choice.winner
    assert set(pt.entries) == set(pt.test) == {False, True}
    assert pt.stats[False] is None  # off: Slurm's placement only
    assert pt.stats[True]["solves"] > 0 and pt.stats[True]["moves"] > 0  # on: the MILP ran and moved jobs
    assert pt.entries[False].blocks != pt.entries[True].blocks  # the two arms are different replays
    assert pt.enabled in (False, True) and pt.runner_up == (not pt.enabled)
    assert "packing sweep" in result.cpu


def test_identical_arms_tie_and_tie_goes_to_off(sites):
    _, pt = _sweep(sites, "pinned")  # nothing flexible: packing never moves a job
    assert pt.swept and pt.stats[True]["moves"] == 0
    assert pt.entries[False].blocks == pt.entries[True].blocks
    assert pt.enabled is False and pt.choice.decided_by == "simplest"


def test_on_needs_a_lead_beyond_the_tie_margin():
    off = Entry(arm_label(False), 0.0, 10.0, 100.0, (10.0, 10.0, 10.0, 10.0))
    slightly = Entry(arm_label(True), 1.0, 9.95, 100.0, (9.7, 10.2, 9.8, 10.1))  # 0.5 % ahead, within noise
    clearly = Entry(arm_label(True), 1.0, 8.0, 100.0, (8.1, 7.9, 8.0, 8.0))  # 20 % ahead in every block
    assert decide(off, slightly).winner == arm_label(False)
    assert decide(off, clearly).winner == arm_label(True)


def test_write_policy_sets_the_swept_switch_and_keeps_the_rest(tmp_path):
    out = tmp_path / "policy.yaml"
    out.write_text("ranking: {name: fcfs}\npacking: {enabled: false, time_cap_s: 2.0}\n")
    twin = {"objective": "avg_bsld", "predicted": {"avg_bsld": 2.0}}
    write_policy(out, RankingSpec(name="sjf"), twin, packing=True)
    assert yaml.safe_load(out.read_text())["packing"] == {"enabled": True, "time_cap_s": 2.0}
    write_policy(out, RankingSpec(name="sjf"), twin)  # not swept: the previous file's packing stays
    assert yaml.safe_load(out.read_text())["packing"] == {"enabled": True, "time_cap_s": 2.0}


def test_the_policy_file_gets_the_sweeps_choice_and_both_arms(sites, tmp_path):
    out = tmp_path / "policy.yaml"
    out.write_text("ranking: {name: fcfs}\npacking: {enabled: true, time_cap_s: 2.0}\n")  # the sweep gives off
    res = CliRunner().invoke(main, ["tune", "--site", str(sites["pinned"]), "--history", HISTORY["pinned"], "--out", str(out),
                                    "--json", *FAST])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout[res.stdout.index("{"):])
    assert [r["packing"] for r in doc["packing"]["rows"]] == [False, True] and doc["packing"]["enabled"] is False
    written = yaml.safe_load(out.read_text())
    assert written["packing"] == {"enabled": False, "time_cap_s": 2.0}
    tp = written["twin"]["packing"]
    assert tp["swept"] and tp["enabled"] is False and tp["runner_up"]["enabled"] is True
    assert tp["predicted"]["avg_bsld"] == doc["packing"]["rows"][0]["avg_bsld"]
    spec = load_policy(out)
    assert spec.packing.enabled is False and spec.twin.packing.runner_up.enabled is True


def test_no_site_model_keeps_the_previous_packing_and_says_so(swf, tmp_path):
    out = tmp_path / "policy.yaml"
    out.write_text("ranking: {name: fcfs}\npacking: {enabled: false, time_cap_s: 3.0}\n")
    res = CliRunner().invoke(main, ["tune", "--history", str(swf), "--out", str(out), "--explain", *FAST])
    assert res.exit_code == 0, res.output
    assert "packing (backfill on): the history has no site model" in res.output
    written = yaml.safe_load(out.read_text())
    assert written["packing"] == {"enabled": False, "time_cap_s": 3.0}
    assert written["twin"]["packing"]["swept"] is False and "no site model" in written["twin"]["packing"]["why"]
