"""The twin's fidelity gate (issue 22 item 4): ``hetsched tune`` replays the history under what the site ran,
compares with the recorded starts, and refuses to write a policy file below the threshold (``--force``
overrides and says so in ``twin.fidelity``). Real SWF files and the real simulator."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.policy import load_policy
from slurm_plugin.sim.policy import sim_ranking
from slurm_plugin.sim.run import prepare, simulate
from slurm_plugin.policy import RankingSpec
from slurm_plugin.tune.fidelity_gate import GateThresholds, check_history

JOBS = 120
FAST = ["-j", "1", "--candidates", "fcfs,sjf", "--no-power", "--site-ranking", "fcfs", "--dqn-budget", "0"]


def _write(path, rows, waits):
    lines = ["; MaxNodes: 16", "; MaxProcs: 16"]
    for (i, t, run, n, limit), w in zip(rows, waits):
        lines.append(f"{i} {t} {w} {run} {n} -1 -1 {n} {limit} -1 1 {i % 7} -1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def histories(tmp_path_factory):
    """The same jobs three times: waits as the simulator's FCFS replay has them (a faithful record), waits
    three times longer (the real machine did something the simulator does not), and no waits (-1)."""
    rng = np.random.default_rng(5)
    rows, t = [], 0
    for i in range(JOBS):
        t += int(rng.exponential(300))
        run = int(rng.lognormal(6, 1.5)) + 1
        n = int(rng.choice([1, 1, 2, 4, 8, 16]))
        rows.append((i + 1, t, run, n, int(run * rng.uniform(1, 3))))
    d = tmp_path_factory.mktemp("fid")
    none = _write(d / "nowait.swf", rows, [-1] * JOBS)
    p = prepare(str(none))
    _, out = simulate(p, sim_ranking(RankingSpec(name="fcfs", age_floor=False), None, 16.0), backfill=True)
    by_id = dict(zip(p.workload.jobs.id.tolist(), (out.begin - p.workload.jobs.submit).tolist()))
    waits = [int(round(by_id[r[0]])) for r in rows]
    assert np.mean(waits) > 60  # loaded: the check has waits to compare
    return {"faithful": _write(d / "faithful.swf", rows, waits),
            "slow": _write(d / "slow.swf", rows, [3 * w + 600 for w in waits]), "none": none}


def test_the_check_measures_the_recorded_starts(histories):
    ok = check_history(prepare(str(histories["faithful"])), [RankingSpec(name="fcfs", age_floor=False)], True)
    assert ok.checked and ok.passed and ok.kendall_tau > 0.99 and ok.mean_wait_sim_s == pytest.approx(
        ok.mean_wait_real_s, rel=0.01) and ok.jobs == JOBS
    bad = check_history(prepare(str(histories["slow"])), [RankingSpec(name="fcfs", age_floor=False)], True)
    assert bad.checked and not bad.passed and "mean wait simulated" in bad.reason and "allowed 10 %" in bad.reason
    assert bad.mean_wait_real_s > 2 * bad.mean_wait_sim_s
    # a looser threshold is the caller's to give
    assert check_history(prepare(str(histories["slow"])), [RankingSpec(name="fcfs", age_floor=False)], True,
                         GateThresholds(min_tau=0.5, wait_rel=10.0)).passed
    none = check_history(prepare(str(histories["none"])), [RankingSpec(name="fcfs", age_floor=False)], True)
    assert not none.checked and "records no start times" in none.reason


def test_tune_refuses_below_the_threshold_and_force_records_it(histories, tmp_path):
    out = tmp_path / "policy.yaml"
    res = CliRunner().invoke(main, ["tune", "--history", str(histories["slow"]), "--out", str(out), *FAST])
    assert res.exit_code == 1 and not out.exists()
    assert "no policy file written" in res.output and "mean wait simulated" in res.output
    assert "--fidelity-wait 0.1" in res.output and "--force" in res.output
    res = CliRunner().invoke(main, ["tune", "--history", str(histories["slow"]), "--out", str(out), "--force",
                                    *FAST])
    assert res.exit_code == 0, res.output
    fid = load_policy(out).twin.fidelity
    assert fid.checked and not fid.passed and fid.forced and fid.replayed_as == "fcfs" and fid.min_tau == 0.9


def test_tune_writes_when_faithful_or_unrecorded(histories, tmp_path):
    for name, checked in (("faithful", True), ("none", False)):
        out = tmp_path / f"{name}.yaml"
        res = CliRunner().invoke(main, ["tune", "--history", str(histories[name]), "--out", str(out), "--json",
                                        *FAST])
        assert res.exit_code == 0, res.output
        fid = load_policy(out).twin.fidelity
        assert fid.checked is checked and fid.passed is checked and not fid.forced
        assert json.loads(res.stdout)["twin"]["fidelity"]["checked"] is checked


def test_a_nan_tau_is_left_out_of_the_policy_file():
    """OpenB replays with every simulated wait 0: tau of the waits is NaN, which a policy file refuses."""
    from slurm_plugin.tune.fidelity_gate import FidelityCheck
    from slurm_plugin.tune.report import fidelity_section

    sec = fidelity_section(FidelityCheck(True, False, "below", 0.9, 0.1, jobs=5, kendall_tau=1.0,
                                         kendall_tau_wait=float("nan"), mean_wait_real_s=61.0, mean_wait_sim_s=0.0))
    assert "kendall_tau_wait" not in sec and sec["kendall_tau"] == 1.0 and sec["mean_wait_sim_s"] == 0.0


def _record(path, tau, real=100.0, sim=104.0):
    """What `hetsched sim fidelity --json` writes (the keys the gate reads, and some it does not)."""
    path.write_text(json.dumps({"jobs": 300, "kendall_tau": tau, "mean_wait_real_s": real, "mean_wait_sim_s": sim,
                                "wait_mae_s": 12.0, "slurm_version": "22.05.8", "power_ups_real": 3}))
    return path


def test_a_benchmark_record_below_the_threshold_refuses_the_policy_too(histories, tmp_path):
    """Issue 22 item 4's 'or this benchmark': a replay on the real slurmctld (`sim fidelity`) gates the twin by
    the same thresholds as the history (here a history without recorded waits, which cannot be checked)."""
    good, bad = _record(tmp_path / "good.json", 0.95), _record(tmp_path / "bad.json", 0.80)
    out = tmp_path / "policy.yaml"
    res = CliRunner().invoke(main, ["tune", "--history", str(histories["none"]), "--out", str(out),
                                    "--fidelity-record", str(good), "--fidelity-record", str(bad), *FAST])
    assert res.exit_code == 1 and not out.exists(), res.output
    assert "no policy file written" in res.output and "bad.json (300 jobs on Slurm 22.05.8)" in res.output
    assert "Kendall tau-b of start times 0.800 < 0.9" in res.output
    res = CliRunner().invoke(main, ["tune", "--history", str(histories["none"]), "--out", str(out),
                                    "--fidelity-record", str(good), *FAST])
    assert res.exit_code == 0, res.output
    (rec,) = load_policy(out).twin.fidelity.records
    assert rec.passed and rec.kendall_tau == 0.95 and rec.jobs == 300 and "good.json" in rec.reason


def test_a_file_that_is_not_a_fidelity_record_is_a_usage_error(histories, tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"jobs": 3}))
    res = CliRunner().invoke(main, ["tune", "--history", str(histories["none"]), "--fidelity-record", str(other),
                                    *FAST])
    assert res.exit_code == 2 and "not a `hetsched sim fidelity` result" in res.output


def test_a_record_is_judged_on_tau_and_mean_wait():
    from slurm_plugin.tune.fidelity_gate import check_record

    doc = {"jobs": 300, "kendall_tau": 0.91, "mean_wait_real_s": 100.0, "mean_wait_sim_s": 125.0}
    check = check_record(doc, "r.json")
    assert check.checked and not check.passed and "off by 25.0 %" in check.reason
    assert check_record(doc, "r.json", GateThresholds(wait_rel=0.3)).passed
    with pytest.raises(ValueError, match="r.json: not a"):
        check_record([1, 2], "r.json")
