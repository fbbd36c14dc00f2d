"""Parallel sweeps: `sim compare` on several processes gives the serial rows and timelines (wall times aside)."""

import json

from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.sim.compare import compare
from slurm_plugin.sim.parallel import run_all
from slurm_plugin.sim.run import prepare

TIMES = ("wall_s", "sim_wall_s", "jobs_per_s")


def _strip(rows):
    return [{k: v for k, v in r.items() if k not in TIMES} for r in rows]


def test_parallel_compare_equals_serial(monkeypatch):
    from slurm_plugin.rank.dqn.policy import MODEL_ENV
    monkeypatch.delenv(MODEL_ENV, raising=False)  # the shipped model
    p = prepare("synthetic:jobs=300,seed=5", "demo")
    kw = dict(power="idle-suspend", suspend_time_s=600.0)
    pols = ["fcfs", "wfp3", "multifactor", "dqn"]
    serial, tl_serial = compare(p, pols, [False, True], jobs=1, **kw)
    seen = []
    par, tl_par = compare(p, pols, [False, True], jobs=2, on_row=seen.append, **kw)
    assert _strip(par) == _strip(serial)
    assert [(r["policy"], r["backfill"]) for r in par] == [(pol, bf) for bf in (False, True) for pol in pols]
    assert tl_par == tl_serial
    assert sorted((r["policy"], r["backfill"]) for r in seen) == sorted((r["policy"], r["backfill"]) for r in par)


def _square(shared, x):
    return shared * x * x


def test_run_all_keeps_task_order():
    assert run_all(_square, 3, list(range(7)), jobs=3) == [3 * x * x for x in range(7)]


def test_cli_compare_jobs(tmp_path):
    out = {}
    for j in ("1", "2"):
        res = CliRunner().invoke(main, ["sim", "compare", "--site", "demo", "-w", "synthetic:jobs=200,seed=2",
                                        "--policies", "fcfs,sjf", "-j", j, "--output", str(tmp_path / f"{j}.json")])
        assert res.exit_code == 0, res.output
        out[j] = _strip(json.loads((tmp_path / f"{j}.json").read_text())["rows"])
    assert out["1"] == out["2"] and len(out["1"]) == 4


def test_bench_sim_with_the_reference(tmp_path):
    """`hetsched bench sim --reference`: the engine and the reference loop on one trace, same schedule."""
    from slurm_plugin.sim.bench import LUBLIN
    if not LUBLIN.exists():
        import pytest
        pytest.skip(f"shared traces absent ({LUBLIN})")
    out = tmp_path / "b.json"
    res = CliRunner().invoke(main, ["bench", "sim", "-w", str(LUBLIN), "--policies", "fcfs", "--reference",
                                    "--output", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    (row,) = doc["rows"]
    assert {"workload", "policy", "backfill", "jobs", "sim_s", "jobs_per_s"} <= set(row) and "commit" in doc
    assert row["jobs"] == 10000 and row["reference"]["same_schedule"] and doc["machine"]["nproc"] >= 1


def test_parallel_rank_eval_rows_equal_serial():
    """`rank eval`'s (backfill, policy, sequence) runs on two processes: the serial rows, each run heard of once."""
    from slurm_plugin.rank.dqn.policy import dqn_ranking
    from slurm_plugin.sim.hooks import ranking
    from slurm_plugin.training.evaluate import compare_rows, protocol_sequences
    p = prepare("synthetic:jobs=400,seed=3", "demo")
    seqs = protocol_sequences(p.workload.jobs, False, 3, 64, "all", 1)
    total = float(p.machine.cores)
    pols = {"dqn": dqn_ranking(p.site, total), "fcfs": ranking("fcfs", p.site, total),
            "wfp3": ranking("wfp3", p.site, total)}
    serial = compare_rows("syn", p.machine, seqs, pols, "slurm", jobs=1)
    runs = []
    par = compare_rows("syn", p.machine, seqs, pols, "slurm", jobs=2, on_run=lambda *a: runs.append(a[:3]))
    assert par == serial and len(par) == 6
    assert sorted(runs) == sorted((bf, pol, i) for bf in (False, True) for pol in pols for i in range(3))


def test_parallel_scale_eval_rows_equal_serial():
    from slurm_plugin.sim.scaling_eval import evaluate
    p = prepare("synthetic:jobs=200,seed=2,load=0.3", "demo")
    rows1, stab1 = evaluate(p, jobs=1)
    rows2, stab2 = evaluate(p, jobs=2)
    assert rows1 == rows2 and stab1 == stab2
    assert [r["policy"] for r in rows2] == ["always-on", "idle-timer", "hetsched", "hetsched+pid", "hetsched+arch",
                                            "pid"]


def test_bench_sim_on_a_site(tmp_path):
    """`hetsched bench sim --on-site SITE W`: a row for a workload on a named site, with its power setting."""
    out = tmp_path / "b.json"
    res = CliRunner().invoke(main, ["bench", "sim", "--on-site", "site_configs/large.yaml", "synthetic:jobs=300,seed=1",
                                    "--policies", "fcfs", "--power", "idle-suspend", "--output", str(out)])
    assert res.exit_code == 0, res.output
    (row,) = json.loads(out.read_text())["rows"]
    assert row["site"] == "large" and row["jobs"] == 300 and row["power"] == "idle-suspend" and row["cpu_s"] > 0
