"""Snapshot parsers on real 22.05 output (captured from the local cluster) and a hand-written 24.11 sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_plugin.snapshot import GresCount, build_snapshot, parse_gres, parse_tres_per_node
from slurm_plugin.snapshot.parse import parse_time_minutes, number

DATA = Path(__file__).parent / "data"


def load(name: str):
    return json.loads((DATA / name).read_text())


@pytest.fixture(scope="module")
def snap_2205():
    return build_snapshot(load("sinfo-v0.0.38.json"), (DATA / "partitions-22.05.txt").read_text(),
                          load("squeue-v0.0.38.json"), slurm_version="22.05.8")


@pytest.fixture(scope="module")
def snap_2411():
    return build_snapshot(load("scontrol-nodes-v0.0.42.json"), (DATA / "partitions-22.05.txt").read_text(),
                          load("squeue-v0.0.42.json"), slurm_version="24.11.5")


def test_2205_nodes_partitions_and_jobs(snap_2205):
    a100 = snap_2205.node("a100n1")
    assert (a100.arch, a100.state, a100.cpus, a100.memory_mb) == ("x86_64", "idle", 32, 262144)
    assert a100.gres == (GresCount("gpu", "a100", 4),) and a100.gres_free("gpu") == 4
    arm = snap_2205.node("armn1")
    assert (arm.arch, arm.state, arm.alloc_cpus, arm.free_cpus) == ("aarch64", "mixed", 4, 60)
    assert snap_2205.default_partition.name == "batch"
    assert snap_2205.partition("batch").nodes == ("armn1", "armn2", "armn3", "x86n1", "x86n2")
    assert snap_2205.archs_of("gpu") == {"x86_64", "aarch64"} and snap_2205.gres_types("gpu") == ("a100", "h100")
    assert len(snap_2205.nodes) == 10
    pending = {j.job_id: j for j in snap_2205.jobs_in()}
    assert pending[6].gres == (GresCount("gpu", "a100", 1),) and pending[6].partition == "gpu"
    assert pending[6].cpus == 2 and pending[6].memory_per_node_mb == 1000 and pending[6].memory_per_cpu_mb is None
    assert snap_2205.pending_in("gpu") == 1



def test_2205_run_times_only_once_real_and_ended_jobs_kept_apart(snap_2205):
    """start_time once started, end_time once ended (a running job's end_time is its limit; a pending job's
    start_time an estimate): what the live guard measures."""
    jobs = {j.job_id: j for j in snap_2205.jobs}
    assert (jobs[7].state, jobs[7].start_time, jobs[7].end_time) == ("RUNNING", 1796005425, None)
    assert (jobs[5].start_time, jobs[5].end_time) == (None, None)
    ended = {j.job_id: j for j in snap_2205.finished}
    assert sorted(ended) == [1, 2, 3, 4] and not set(ended) & set(jobs)
    assert (ended[2].state, ended[2].start_time, ended[2].end_time, ended[2].nodes) == (
        "COMPLETED", 1796005406, 1796005407, "armn1")
    assert ended[1].state == "FAILED" and ended[1].nodes == ""  # never ran


def test_2411_list_states_and_number_objects(snap_2411):
    a100 = snap_2411.node("a100n1")
    assert (a100.state, a100.alloc_cpus, a100.gres_free("gpu", "a100")) == ("mixed", 8, 3)
    drained = snap_2411.node("armn1")
    assert drained.flags == ("drain",) and not drained.usable_now and drained.reason == "maintenance"
    assert snap_2411.node("armn2").powered_down and not snap_2411.node("armn2").usable_now
    assert snap_2411.node("broken") is not None  # a sparse record still parses to defaults
    jobs = {j.job_id: j for j in snap_2411.jobs}
    assert 43 not in jobs  # finished jobs are dropped
    assert (jobs[41].state, jobs[41].cpus, jobs[41].memory_per_node_mb, jobs[41].memory_per_cpu_mb) == (
        "PENDING", 4, 2048, None)
    assert jobs[41].time_limit_min == 60 and jobs[41].priority == 510 and jobs[41].array_job_id is None
    assert jobs[42].gres == (GresCount("gpu", "a100", 2),) and jobs[42].time_limit_min is None


def test_malformed_record_is_skipped_not_fatal():
    snap = build_snapshot({"nodes": [{"state": "idle"}, {"name": "ok1", "state": "idle", "features": "x86_64"}]},
                          "", {"jobs": [{"name": "no id"}]})
    assert [n.name for n in snap.nodes] == ["ok1"] and snap.jobs == ()


def test_empty_snapshot_is_unknown():
    assert not build_snapshot({}, "").known


@pytest.mark.parametrize("text, expected", [
    ("gpu:a100:4(S:0-1)", (GresCount("gpu", "a100", 4),)),
    ("gpu:a100:0(IDX:N/A),npu:0,dpu:0", (GresCount("gpu", "a100", 0), GresCount("npu", None, 0),
                                         GresCount("dpu", None, 0))),
    ("gpu:a100:2(IDX:0,2),npu:ascend910b:1(IDX:3)", (GresCount("gpu", "a100", 2),
                                                     GresCount("npu", "ascend910b", 1))),
    ("gres:gpu:1", (GresCount("gpu", None, 1),)),
    ("gres/gpu:h100=2", (GresCount("gpu", "h100", 2),)),
    ("gres/gpu:a100:1", (GresCount("gpu", "a100", 1),)),  # 24.11's scontrol TresPerNode
    ("gres/gpu=3", (GresCount("gpu", None, 3),)),
    ("gpu", (GresCount("gpu", None, 1),)),
    ("", ()), (None, ()), ("(null)", ()), ("N/A", ()),
])
def test_parse_gres(text, expected):
    assert parse_gres(text) == expected


def test_tres_per_node_drops_non_gres():
    assert parse_tres_per_node("cpu=2,gres/gpu=1") == (GresCount("gpu", None, 1),)


def test_parse_gres_rejects_garbage():
    with pytest.raises(ValueError):
        parse_gres("gpu:a100:x=y")


@pytest.mark.parametrize("value, expected", [
    (5, 5), ({"set": True, "infinite": False, "number": 7}, 7), ({"set": False, "number": 7}, None),
    ({"set": True, "infinite": True, "number": 0}, None), (4294967294, None), (None, None), (True, None),
    ("12", 12), ("x", None),
])
def test_number(value, expected):
    assert number(value) == expected


@pytest.mark.parametrize("text, minutes", [
    ("1-00:00:00", 1440), ("30", 30), ("30:10", 31), ("2:00:00", 120), ("12:00:00", 720), ("1-2", 1560),
    ("1-2:30", 1590), ("1-2:30:00", 1590), ("INFINITE", None), ("UNLIMITED", None),
])
def test_time_minutes(text, minutes):
    assert parse_time_minutes(text) == minutes


def test_oneliner_keeps_a_comment_with_spaces_and_tags_whole():
    from slurm_plugin.slurm.client import parse_scontrol_oneliner
    rec = parse_scontrol_oneliner("JobId=5 Comment=run two hetsched:class=web,tier=std x=1 Priority=3 Reason=None")
    assert rec["Comment"] == "run two hetsched:class=web,tier=std x=1"
    assert rec["Priority"] == "3" and rec["Reason"] == "None"
