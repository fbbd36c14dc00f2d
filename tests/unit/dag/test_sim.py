"""DAG workloads in the simulator: the engine's dependencies, the job tables of each policy, dag eval."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.dag.sim import build_jobs, evaluate, machine_for
from slurm_plugin.dag.spec import parse_workflow
from slurm_plugin.dag.streams import Arrival, read_tpch, tpch_workflow
from slurm_plugin.sim.engine import Engine
from slurm_plugin.sim.hooks import ranking
from slurm_plugin.sim.machine import homogeneous
from slurm_plugin.workload.jobs import JobTable

TPCH = Path(__file__).resolve().parents[3] / ".." / "shared" / "workloads" / "dag" / "decima_tpch_dags.json.gz"


def test_engine_holds_a_job_until_its_dependencies_end():
    # one 2-core node; job 0 (100 s) -> job 2 waits for it although job 1 arrives later and would fit first
    jobs = JobTable.build({"submit": [0, 0, 1], "run": [100, 10, 10], "limit": [200, 20, 20], "nodes": [1, 1, 1],
                           "cores": [1, 1, 1]})
    after = [[], [], [0]]
    e = Engine(homogeneous(1, 2), jobs, ranking("fcfs"), after=after)
    out = e.run()
    assert out.begin[2] == pytest.approx(100.0) and out.begin[1] == 0.0
    without = Engine(homogeneous(1, 2), jobs, ranking("fcfs")).run()
    assert without.begin[2] == pytest.approx(10.0)  # the held job would have started when job 1 ended


def test_dependency_chain_over_many_jobs_respects_every_edge():
    rng = np.random.default_rng(3)
    n = 300
    jobs = JobTable.build({"submit": np.sort(rng.uniform(0, 500, n)), "run": rng.uniform(1, 50, n),
                           "limit": np.full(n, 100.0), "nodes": np.ones(n, int), "cores": rng.integers(1, 5, n)})
    after = [sorted(set(rng.integers(0, j, 2).tolist())) if j > 2 else [] for j in range(n)]
    out = Engine(homogeneous(4, 4), jobs, ranking("sjf"), after=after).run()
    assert not np.isnan(out.begin).any()
    for j, parents in enumerate(after):
        for p in parents:
            assert out.begin[j] >= out.end[p] - 1e-9


def _two_stage():
    wf = parse_workflow({"name": "w", "tasks": [{"name": "a", "array": 10, "runtime_s": 2},
                                                {"name": "b", "array": 4, "runtime_s": 30, "after": ["a"]}]})
    return Arrival(wf, 0.0, {"a": np.full(10, 2.0), "b": np.full(4, 30.0)})


def test_job_tables_per_policy():
    arr = [_two_stage()]
    m = homogeneous(2, 4)
    naive, after, owner = build_jobs("naive", arr, m)
    assert len(naive) == 14 and all(len(after[j]) == 10 for j in range(len(naive)) if naive.run[j] > 20)
    rrg, after, _ = build_jobs("rrg", arr, m, min_unit_s=10)
    # one job of 8 cores is expected to take 1 + 2.5 + 30 = 33.5 s, split units 11 + 31 = 42 s: merged
    assert len(rrg) == 1 and rrg.nodes[0] == 2
    mono, _, _ = build_jobs("monolithic", arr, m)
    # widest level 10 cores -> 2 nodes of 4 = 8 cores: a takes max(2, 20/8) = 2.5 s, b 30 s, + launch 1 s
    assert len(mono) == 1 and mono.nodes[0] == 2 and mono.run[0] == pytest.approx(33.5)


def test_evaluate_rows_on_a_small_stream():
    arr = [_two_stage(), Arrival(_two_stage().workflow, 5.0, _two_stage().durations)]
    rows = {p: evaluate(p, arr, launch_s=1.0, min_unit_s=10) for p in ("monolithic", "naive", "rrg")}
    for r in rows.values():
        assert r["workflows"] == 2 and r["unfinished"] == 0 and r["avg_jct_s"] >= 32


@pytest.mark.skipif(not TPCH.exists(), reason="../shared/workloads/dag is absent")
def test_tpch_graphs_read_as_workflows():
    dags = read_tpch(TPCH)
    assert len(dags) == 110
    wf, d = tpch_workflow("tpch-2g-q1", dags["tpch-2g-q1"], np.random.default_rng(1))
    assert [t.array for t in wf.tasks] == [12, 200, 200, 5]
    assert all(len(d[t.name]) == t.array and (d[t.name] > 0).all() for t in wf.tasks)


def test_dag_eval_cli_writes_the_rows(tmp_path):
    """On a Decima-format file it has not seen: two small graphs."""
    import gzip

    stage = lambda i, n, ms: {"stage": i, "num_tasks": n, "first_wave_ms": {"5": [ms] * 5, "10": [ms]},
                              "rest_wave_ms": {"5": [ms], "10": []}, "fresh_ms": {"5": [ms]}}
    dags = {"g1": {"size": "x", "query": 1, "edges": [[0, 1], [0, 2]],
                   "stages": [stage(0, 4, 3000), stage(1, 20, 2000), stage(2, 2, 9000)]},
            "g2": {"size": "x", "query": 2, "edges": [[1, 0]], "stages": [stage(0, 3, 5000), stage(1, 8, 1000)]}}
    path = tmp_path / "dags.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(dags, fh)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["dag", "eval", "--dags", str(path), "--count", "6", "--load", "0.5",
                                    "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert [r["policy"] for r in doc["rows"]] == ["monolithic", "naive", "critical-path", "rrg", "rrg-sjf"]
    for r in doc["rows"]:
        assert {"policy", "workflows", "avg_jct_s", "avg_wait_s", "makespan_s"} <= set(r) and r["workflows"] == 6
    assert doc["provenance"]["git_commit"] is not None
    # several streams side by side in one run, each row naming its stream; unset keys come from the options
    res = CliRunner().invoke(main, ["dag", "eval", "--stream", f"{path}:load=0.5,count=3", "--stream",
                                    "pipelines:site=demo,seed=2,count=2", "--load", "0.7", "--policies", "naive,rrg",
                                    "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert [(r["stream"], r["policy"], r["workflows"]) for r in doc["rows"]] == [
        ("dags tpch-100 load 0.5 seed 1 (3 wf)", "naive", 3), ("dags tpch-100 load 0.5 seed 1 (3 wf)", "rrg", 3),
        ("pipelines demo load 0.7 seed 2 (2 wf)", "naive", 2), ("pipelines demo load 0.7 seed 2 (2 wf)", "rrg", 2)]
    assert [st["load"] for st in doc["streams"]] == [0.5, 0.7]
    res = CliRunner().invoke(main, ["dag", "eval", "--stream", "pipelines:site=demo,lod=2"])
    assert res.exit_code == 2 and "'lod=2' is not key=value with key one of site, load" in res.output


def test_pipeline_generator_on_demo():
    from slurm_plugin.dag.sim import capacity
    from slurm_plugin.dag.streams import pipeline_stream
    from slurm_plugin.site import load_site

    site = load_site("demo")
    arr = pipeline_stream(4, capacity(machine_for(site)), 0.5, seed=2)
    r = evaluate("rrg", arr, site)
    assert r["workflows"] == 4 and r["unfinished"] == 0


def test_plain_json_dags_and_a_bad_file(tmp_path):
    stage = {"stage": 0, "num_tasks": 2, "first_wave_ms": {"2": [1000, 2000]}, "rest_wave_ms": {}, "fresh_ms": {}}
    (tmp_path / "d.json").write_text(json.dumps({"one": {"edges": [], "stages": [stage]}}))
    assert list(read_tpch(tmp_path / "d.json")) == ["one"]
    (tmp_path / "bad.json").write_text("{\n  nope")
    with pytest.raises(ValueError, match="bad.json:2: not JSON"):
        read_tpch(tmp_path / "bad.json")


def _training(name: str, runtime_s: float, limit_s: int, at: float) -> Arrival:
    """One whole-node training (4 GPUs, A100 or H100; ai-training runs twice as fast on the H100)."""
    wf = parse_workflow({"name": name, "tasks": [{"name": "train", "runtime_s": runtime_s, "time": limit_s,
                                                  "class": "ai-training",
                                                  "gpu": {"count": 4, "types": ["a100", "h100"]}}]})
    return Arrival(wf, at, {"train": np.full(1, runtime_s)})


def test_rrg_rematches_a_unit_off_a_busy_class_when_another_finishes_it_sooner():
    # both trainings are planned on the one H100 node; the second finds it busy for hours (first: 7200 s nominal,
    # 3600 s there, limit 4 h): the A100 (3600 s) finishes it sooner, so the next cycle moves it (before: pinned
    # to the H100, it waited 3600 s then ran 1800 s)
    from slurm_plugin.site.loader import load_site

    demo = load_site("demo")
    arr = [_training("long", 7200, 4 * 3600, 0.0), _training("short", 3600, 4 * 3600, 0.0)]
    row = evaluate("rrg", arr, site=demo, launch_s=1.0)
    assert row["rematch_moves"] == 1 and row["avg_jct_s"] < 4000  # pinned: (3601 + 5401) / 2 = 4501


def test_rrg_waits_for_a_busy_class_that_frees_soon_enough():
    # the first training's limit says the H100 frees within 600 s: 600 + 1800 s there beats 3600 s on the A100
    from slurm_plugin.site.loader import load_site

    demo = load_site("demo")
    arr = [_training("first", 1000, 600, 0.0), _training("second", 3600, 4 * 3600, 0.0)]
    row = evaluate("rrg", arr, site=demo, launch_s=1.0)
    assert row["rematch_moves"] == 0
