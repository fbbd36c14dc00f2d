"""Gavel/Philly job streams: run time from the V100 throughput, >8-GPU jobs reported as skipped."""

import json

import pytest

from slurm_plugin.workload import WorkloadError, read_philly


@pytest.fixture
def trace(tmp_path):
    (tmp_path / "philly_vc_traces").mkdir()
    (tmp_path / "gavel_simulation_throughputs.json").write_text(json.dumps(
        {"v100": {"('A3C', 1)": {"null": 10.0}, "('A3C', 2)": {"null": 16.0}}}))
    p = tmp_path / "philly_vc_traces" / "x.trace"
    p.write_text("A3C\tcmd\t-n\t1\t1000\t5.0\t1\nA3C\tcmd\t-n\t1\t1600\t0.0\t2\nA3C\tcmd\t-n\t1\t99\t1.0\t16\n")
    return p


def test_read(trace):
    w = read_philly(trace)
    assert w.jobs.submit.tolist() == [0.0, 5.0] and w.jobs.run.tolist() == [100.0, 100.0]
    assert w.jobs.gres_count.tolist() == [2, 1] and w.jobs.gres_label(0) == "gpu:2"
    assert w.skipped == {"no v100 throughput entry for 16 GPUs": 1}


def test_bad_line(trace):
    trace.write_text("A3C\tcmd\t-n\t1\tx\t0\t1\n")
    with pytest.raises(WorkloadError, match=r"x.trace:1: total_steps is not a number"):
        read_philly(trace)


def test_shared_traces_run_on_the_large_site(workloads):
    from slurm_plugin.sim.run import prepare, simulate
    traces = sorted((workloads / "gpu" / "gavel" / "philly_vc_traces").glob("*.trace"))
    p = prepare(str(traces[0]), "large")
    row, _ = simulate(p, "fcfs")
    assert row["jobs"] == len(p.workload.jobs) > 0 and row["unstarted"] == 0
