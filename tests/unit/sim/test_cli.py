"""``hetsched sim``: result rows carry the keys of the results format; errors exit with a clear message."""

import json

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main

KEYS = {"workload", "policy", "backfill", "jobs", "unstarted", "metrics", "wall_s"}
METRICS = {"avg_wait_s", "p95_wait_s", "avg_bsld", "utilization", "energy_kwh", "makespan_s", "max_wait_s"}
LINE = "{i} {s} -1 {r} {n} -1 -1 {n} {r} -1 1 1 1 -1 1 -1 -1 -1\n"


@pytest.fixture
def trace(tmp_path):
    p = tmp_path / "small.swf"
    p.write_text("; MaxNodes: 4\n; MaxProcs: 4\n" + "".join(
        LINE.format(i=i, s=10 * i, r=100 + i, n=1 + i % 4) for i in range(1, 30)))
    return p


@pytest.mark.parametrize("args", [[], ["--no-backfill"], ["--semantics", "rlscheduler"],
                                  ["--policy", "multifactor"]])
def test_run_writes_the_results_format(trace, tmp_path, args):
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["sim", "run", "-w", str(trace), "--output", str(out), *args])
    assert res.exit_code == 0, res.output
    row = json.loads(out.read_text())
    assert KEYS <= set(row) and METRICS <= set(row["metrics"])
    assert row["jobs"] == 29 and row["unstarted"] == 0 and row["provenance"]["nproc"] >= 1


def test_compare_rows_table_and_plot(trace, tmp_path):
    out, png = tmp_path / "c.json", tmp_path / "c.png"
    res = CliRunner().invoke(main, ["sim", "compare", "-w", str(trace), "--policies", "fcfs,sjf",
                                    "--output", str(out), "--plot", str(png)])
    assert res.exit_code == 0, res.output
    rows = json.loads(out.read_text())["rows"]
    assert [(r["policy"], r["backfill"]) for r in rows] == [("fcfs", False), ("sjf", False), ("fcfs", True),
                                                          ("sjf", True)]
    assert all(KEYS <= set(r) for r in rows)
    assert png.stat().st_size > 1000 and "| fcfs | yes |" in res.output


def test_synthetic_on_a_site(tmp_path):
    res = CliRunner().invoke(main, ["sim", "run", "--site", "demo", "-w", "synthetic:jobs=300,seed=1",
                                    "--power", "idle-suspend", "--json"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout)
    assert row["jobs"] == 300 and set(row["metrics"]["utilization_by_group"]) >= {"cpu-x86", "gpu-h100"}
    assert row["metrics"]["energy_kwh"] > 0 and row["metrics"]["cost"] > 0


def test_too_big_trace_is_an_error(tmp_path):
    p = tmp_path / "big.swf"
    p.write_text("; MaxNodes: 2\n" + LINE.format(i=1, s=0, r=10, n=8))
    res = CliRunner().invoke(main, ["sim", "run", "-w", str(p)])
    assert res.exit_code == 1 and "job 1: 8 nodes, only 2 eligible nodes" in res.output


def test_bad_line_is_an_error(tmp_path):
    p = tmp_path / "bad.swf"
    p.write_text("; MaxNodes: 2\n1 2 3\n")
    res = CliRunner().invoke(main, ["sim", "run", "-w", str(p)])
    assert res.exit_code == 1 and f"{p}:2: 3 fields" in res.output


def test_headerless_swf_infers_the_machine(tmp_path):
    p = tmp_path / "nohead.swf"
    p.write_text(LINE.format(i=1, s=0, r=10, n=3) + LINE.format(i=2, s=1, r=10, n=1))
    res = CliRunner().invoke(main, ["sim", "run", "-w", str(p), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["nodes"] == 3


def test_compress_packs_arrivals_and_is_recorded(trace):
    """29 jobs 10 s apart on 4 nodes already queue; 20x denser (0.5 s apart, run times kept) they wait longer."""
    rows = {}
    for c in ("1", "20"):
        res = CliRunner().invoke(main, ["sim", "run", "-w", str(trace), "--compress", c, "--json"])
        assert res.exit_code == 0, res.output
        rows[c] = json.loads(res.stdout)
    assert rows["1"]["compress"] == 1.0 and rows["20"]["compress"] == 20.0
    assert rows["20"]["metrics"]["avg_wait_s"] > rows["1"]["metrics"]["avg_wait_s"]
    res = CliRunner().invoke(main, ["sim", "run", "-w", str(trace), "--compress", "0"])
    assert res.exit_code == 1 and "--compress must be > 0" in res.output


@pytest.mark.parametrize("flag", [[], ["--will-run"]])
def test_fidelity_from_record_re_simulates_with_the_chosen_model(tmp_path, flag):
    """``--from-record`` replays a committed record in the simulator only (no cluster); ``--will-run`` reaches
    the replay's timing (Slurm's will-run plans, off by default)."""
    from pathlib import Path

    record = Path(__file__).parents[3] / "results/sim/fidelity/fidelity_8_seed5_trixie.json"
    out = tmp_path / "f.json"
    res = CliRunner().invoke(main, ["sim", "fidelity", "--from-record", str(record), "--output", str(out), *flag])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["jobs"] == 8 and doc["slurm_version"].startswith("24.11")
    assert doc["timing"]["will_run"] is bool(flag) and doc["timing"]["reservations"] == 250


def test_fidelity_timing_switches_reach_the_replay(tmp_path):
    """``--timing NAME=on|off`` switches any of the replay's models for the comparison (here the batch passes,
    off by default, on; the backfill cycle seeing ended runs, on by default, off)."""
    from pathlib import Path

    record = Path(__file__).parents[3] / "results/sim/fidelity/fidelity_8_seed5_trixie.json"
    out = tmp_path / "f.json"
    res = CliRunner().invoke(main, ["sim", "fidelity", "--from-record", str(record), "--output", str(out),
                                    "--timing", "batch_passes=on", "--timing", "bf_sees_end=off"])
    assert res.exit_code == 0, res.output
    timing = json.loads(out.read_text())["timing"]
    assert timing["batch_sched_delay_s"] is not None and timing["bf_sees_end"] is False
    assert timing["kill_at_check"] is True  # the defaults stay as they are


@pytest.mark.parametrize("bad", ["nope=on", "batch_passes=maybe", "batch_passes"])
def test_fidelity_timing_refuses_what_it_does_not_know(tmp_path, bad):
    from pathlib import Path

    record = Path(__file__).parents[3] / "results/sim/fidelity/fidelity_8_seed5_trixie.json"
    res = CliRunner().invoke(main, ["sim", "fidelity", "--from-record", str(record), "--output",
                                    str(tmp_path / "f.json"), "--timing", bad])
    assert res.exit_code == 1, res.output
    assert f"--timing {bad!r}: expected NAME=on|off" in res.output and "bf_sees_end" in res.output
    assert not (tmp_path / "f.json").exists()
