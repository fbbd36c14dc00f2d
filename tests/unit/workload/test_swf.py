"""SWF reader: header machine, -1 conventions, skipped records reported, errors naming file and line."""

import gzip

import numpy as np
import pytest

from slurm_plugin.workload import UnfitJobsError, WorkloadError, read_swf
from slurm_plugin.workload.swf import machine_of

HEAD = "; Version: 2.2\n; MaxNodes: 8\n; MaxProcs: 32\n"
LINE = "{id} {sub} -1 {run} {alloc} -1 -1 {req} {lim} -1 1 {user} 1 -1 1 -1 -1 -1\n"


def swf(tmp_path, body, name="t.swf", head=HEAD):
    p = tmp_path / name
    text = head + body
    if name.endswith(".gz"):
        with gzip.open(p, "wt") as fh:
            fh.write(text)
    else:
        p.write_text(text)
    return p


@pytest.mark.parametrize("header,expected", [
    ({"MaxNodes": "8", "MaxProcs": "32"}, (8, 4)),
    ({"MaxNodes": "256"}, (256, 1)),
    ({"MaxProcs": "93312"}, (93312, 1)),
    ({}, None),
])
def test_machine_from_header(header, expected):
    assert machine_of(header, "x") == expected


@pytest.mark.parametrize("name", ["t.swf", "t.swf.gz"])
def test_fields_and_conventions(tmp_path, name):
    body = (LINE.format(id=1, sub=10, run=100, alloc=8, req=6, lim=200, user=3)
            + LINE.format(id=2, sub=5, run=50, alloc=-1, req=5, lim=-1, user=4)      # size from requested
            + LINE.format(id=3, sub=20, run=-1, alloc=4, req=4, lim=60, user=1)      # unknown run: skipped
            + LINE.format(id=4, sub=30, run=7, alloc=-1, req=-1, lim=60, user=1))    # unknown size: skipped
    w = read_swf(swf(tmp_path, body, name))
    assert w.machine == (8, 4)
    assert w.jobs.id.tolist() == [2, 1]  # sorted by submit
    assert w.jobs.nodes.tolist() == [2, 2]  # ceil(5/4), ceil(max(8,6)/4)
    assert w.jobs.cores.tolist() == [4, 4]
    assert w.jobs.limit.tolist() == [50, 200]  # -1 -> run time
    assert w.jobs.user.tolist() == [4, 3]
    assert w.skipped == {"unknown run time (-1)": 1, "unknown size (procs <= 0)": 1}


@pytest.mark.parametrize("body,line,msg", [
    ("1 2 3\n", 4, "3 fields"),
    (LINE.format(id=1, sub=0, run=1, alloc=1, req=1, lim=1, user=1) + "2 x -1 1 1 -1 -1 1 1 -1 1 1 1 -1 1 -1 -1 -1\n",
     5, "not a number"),
])
def test_bad_lines_name_file_and_line(tmp_path, body, line, msg):
    p = swf(tmp_path, body)
    with pytest.raises(WorkloadError, match=rf"{p}:{line}: .*{msg}"):
        read_swf(p)


def test_missing_file(tmp_path):
    with pytest.raises(WorkloadError, match="no such file"):
        read_swf(tmp_path / "nope.swf")


def test_too_big_job_is_reported_not_dropped(tmp_path):
    from slurm_plugin.sim.run import prepare
    p = swf(tmp_path, LINE.format(id=1, sub=0, run=1, alloc=64, req=64, lim=9, user=1)
            + LINE.format(id=2, sub=1, run=1, alloc=4, req=4, lim=9, user=1))
    with pytest.raises(UnfitJobsError, match="job 1: 16 nodes, only 8 eligible nodes"):
        prepare(str(p))
    prepared = prepare(str(p), drop_unfit=True)
    assert prepared.workload.jobs.id.tolist() == [2]
    assert prepared.workload.dropped == [(1, "16 nodes, only 8 eligible nodes")]


def test_shared_traces_read(workloads):
    w = read_swf(workloads / "swf" / "LANL-CM5-1994-4.1-cln.swf.gz")
    assert w.machine == (1024, 1)
    assert len(w.jobs) == 122_057 and w.skipped == {"unknown size (procs <= 0)": 3}
    assert np.all(np.diff(w.jobs.submit) >= 0)
    lub = read_swf(workloads / "swf" / "lublin_256.swf")
    assert lub.machine == (256, 1) and len(lub.jobs) == 10_000
