"""Slurm accounting readers: sacct -P and sacct --json."""

import json

import pytest

from slurm_plugin.workload import WorkloadError, read_sacct_json, read_sacct_parsable
from slurm_plugin.workload.sacct import parse_mem_gb, parse_timelimit

HEADER = "JobID|User|Submit|Start|End|Timelimit|NNodes|NCPUS|ReqMem|ReqTRES|Constraints|QOS|State"


@pytest.mark.parametrize("text,secs", [("01:00:00", 3600), ("1-00:00:00", 86400), ("30", 1800), ("05:30", 330),
                                       ("2-12", 2 * 86400 + 12 * 3600), ("UNLIMITED", None)])
def test_timelimit(text, secs):
    assert parse_timelimit(text) == secs


@pytest.mark.parametrize("text,cpus,nodes,gb", [("4G", 8, 2, 4.0), ("2Gc", 8, 2, 8.0), ("1024M", 1, 1, 1.0),
                                                 ("16Gn", 4, 1, 16.0)])
def test_mem(text, cpus, nodes, gb):
    assert parse_mem_gb(text, cpus, nodes) == gb


def test_parsable(tmp_path):
    p = tmp_path / "acct.txt"
    p.write_text("\n".join([
        HEADER,
        "10|alice|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T00:11:00|00:30:00|2|16|4G|"
        "billing=16,cpu=16,gres/gpu:a100=4,node=2|aarch64|normal|COMPLETED",
        "10.batch|||2024-01-01T00:01:00|2024-01-01T00:11:00||1|8|||||COMPLETED",
        "11|bob|2024-01-01T00:00:30|Unknown|Unknown|01:00:00|1|1|1G|cpu=1||normal|PENDING",
    ]) + "\n")
    w = read_sacct_parsable(p)
    j = w.jobs
    assert j.id.tolist() == [10] and j.submit.tolist() == [0.0] and j.run.tolist() == [600.0]
    assert j.limit.tolist() == [1800.0] and j.nodes.tolist() == [2] and j.cores.tolist() == [8]
    assert j.gres_label(0) == "gpu:a100:2" and j.arch_mask.tolist() == [1]  # ARCHES[0] = aarch64
    assert w.skipped == {"never started or still running": 1}
    assert w.recorded_wait == {10: 60.0}  # Start - Submit: what the twin's fidelity check compares with


def test_parsable_bad_header(tmp_path):
    p = tmp_path / "acct.txt"
    p.write_text("JobID|User\n1|a\n")
    with pytest.raises(WorkloadError, match=r"acct.txt:1: sacct -P header lacks Submit"):
        read_sacct_parsable(p)


def test_parsable_bad_line(tmp_path):
    p = tmp_path / "acct.txt"
    p.write_text(HEADER + "\n12|a|2024-01-01T00:00:00|x\n")
    with pytest.raises(WorkloadError, match=r"acct.txt:2: 4 fields"):
        read_sacct_parsable(p)


def test_json(tmp_path):
    job = {"job_id": 7, "user": "alice", "constraints": "x86_64|aarch64",
           "time": {"submission": 1000, "start": 1010, "end": 1070,
                    "limit": {"set": True, "infinite": False, "number": 5}},
           "required": {"CPUs": 4}, "allocation_nodes": 1,
           "tres": {"requested": [{"type": "cpu", "count": 4}, {"type": "gres", "name": "gpu:h100", "count": 1}]}}
    p = tmp_path / "acct.json"
    p.write_text(json.dumps({"jobs": [job]}))
    j = read_sacct_json(p).jobs
    assert j.run.tolist() == [60.0] and j.limit.tolist() == [300.0] and j.cores.tolist() == [4]
    assert j.gres_label(0) == "gpu:h100:1" and j.arch_mask.tolist() == [3]


def test_json_not_sacct(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("[]")
    with pytest.raises(WorkloadError, match="no 'jobs' list"):
        read_sacct_json(p)
