"""Bounded trace input (issue 11, item 11): every reader refuses a bad file with ``file:line: what`` - a huge
machine, NaN/infinite/4,300-digit numbers, a zero machine, corrupt gzip, binary data, nothing usable."""

from __future__ import annotations

import gzip
import json
import time

import pytest

from slurm_plugin.site import load_site
from slurm_plugin.workload import WorkloadError
from slurm_plugin.workload.loader import load_workload
from slurm_plugin.workload.sacct import constraint_arch_mask
from slurm_plugin.workload.usage import load_usage

HEAD = "; Version: 2.2\n; MaxNodes: 8\n; MaxProcs: 32\n"
LINE = "{id} {sub} -1 {run} {procs} -1 -1 {procs} 100 -1 1 1 1 -1 1 -1 -1 -1\n"
GOOD = LINE.format(id=1, sub=0, run=60, procs=4)
SACCT_HEAD = "JobID|User|Submit|Start|End|Timelimit|NNodes|NCPUS|ReqMem|ReqTRES|Constraints|State\n"
SACCT_ROW = "{id}|u|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T00:11:00|{limit}|{nodes}|{cpus}|4G|" \
            "billing=1|{constraint}|COMPLETED\n"
PHILLY_TPUT = {"v100": {"('A3C', 1)": {"null": 10.0}}}


def sacct_row(**kw) -> str:
    return SACCT_ROW.format(**{"id": 7, "limit": "01:00:00", "nodes": 1, "cpus": 4, "constraint": "", **kw})


# (name of the file, its bytes, expected line (None: no line), words of the error)
CASES = [
    ("huge-machine.swf", "; MaxNodes: 1000000000\n; MaxProcs: 1000000000\n" + GOOD, 1,
     "header MaxNodes is 1e+09, must be within 1 .. 100000"),
    ("zero-machine.swf", "; MaxNodes: 0\n" + GOOD, 1, "header MaxNodes is 0, must be within 1"),
    ("nan-submit.swf", HEAD + GOOD + "2 nan -1 60 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1\n", 5,
     "submit time (field 2) is nan: not a finite number"),
    ("inf-run.swf", HEAD + "1 0 -1 inf 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1\n", 4,
     "run time (field 4) is inf: not a finite number"),
    ("digits-run.swf", HEAD + "1 0 -1 " + "9" * 4300 + " 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1\n", 4,
     "run time (field 4) has 4300 characters"),
    ("ten-years-run.swf", HEAD + LINE.format(id=1, sub=0, run=4e8, procs=4), 4,
     "run time (field 4) is 4e+08, must be within -1 .. 3.1536e+08"),
    ("all-zero-procs.swf", HEAD + LINE.format(id=1, sub=0, run=60, procs=0) + LINE.format(id=2, sub=1, run=60, procs=0),
     None, "no usable job records: all skipped (2 unknown size (procs <= 0))"),
    ("binary.swf", b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe\n", 1, "NUL byte: a binary file"),
    ("latin1.swf", HEAD.encode() + b"; Note: caf\xe9\n", 4, "not UTF-8 text"),
    ("corrupt.swf.gz", gzip.compress((HEAD + GOOD * 2000).encode())[:300] + b"\x00garbage" * 50, None,
     "corrupt gzip data"),
    ("not-gzip.swf.gz", b"plain text, not gzip\n", None, "corrupt gzip data"),
    ("huge-nodes.txt", SACCT_HEAD + sacct_row(nodes=10**9), 2, "NNodes of job 7 is 1e+09, must be within 0 .. 100000"),
    ("digits-limit.txt", SACCT_HEAD + sacct_row(limit="9" * 4300), 2, "bad record: time limit"),
    ("bad-constraint.txt", SACCT_HEAD + sacct_row(constraint="(aarch64"), 2, "bad record: constraint '(aarch64'"),
    ("binary.txt", SACCT_HEAD.encode() + b"\x00\x01\x02\n", 2, "NUL byte"),
    ("nan.json", '{"jobs": [{"job_id": 1, "time": {"submission": NaN, "start": 1, "end": 2}}]}', None,
     "not a usable JSON number: NaN"),
    ("huge-cpus.json", json.dumps({"jobs": [{"job_id": 1, "required": {"CPUs": 1e300},
                                             "time": {"submission": 0, "start": 1, "end": 2, "limit": 5}}]}),
     None, "(job #0): NCPUS of job 1 is 1e+300"),
    ("philly_vc_traces/inf.trace", "A3C\tcmd\t-n\t1\tinf\t0\t1\n", 1, "total_steps is inf: not a finite number"),
    ("philly_vc_traces/gpus.trace", "A3C\tcmd\t-n\t1\t100\t0\t1000000000\n", 1, "num_gpus is 1e+09, must be"),
]


@pytest.mark.parametrize("name,content,line,words", CASES, ids=[c[0] for c in CASES])
def test_bad_trace_is_refused_with_file_and_line(tmp_path, name, content, line, words):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    (tmp_path / "gavel_simulation_throughputs.json").write_text(json.dumps(PHILLY_TPUT))
    t0 = time.perf_counter()
    with pytest.raises(WorkloadError) as err:
        load_workload(str(path))
    assert time.perf_counter() - t0 < 5.0
    where = f"{path}:{line}: " if line else f"{path}"
    assert str(err.value).startswith(where), str(err.value)
    assert words in str(err.value), str(err.value)


@pytest.mark.parametrize("spec,words", [
    ("synthetic:jobs=1000000000", "synthetic jobs is 1e+09, must be within 1 .. 5e+06"),
    ("synthetic:load=nan", "synthetic load is nan: not a finite number"),
    ("synthetic:median_run_s=inf", "synthetic median_run_s is inf"),
    ("synthetic:jobs=" + "9" * 4300, "synthetic jobs has 4300 characters"),
])
def test_bad_synthetic_spec(spec, words):
    with pytest.raises(WorkloadError) as err:
        load_workload(spec, load_site("demo"))
    assert words in str(err.value) and str(err.value).count(spec[:20]) == 1


def test_usage_history_is_bounded_too(tmp_path):
    path = tmp_path / "usage.txt"
    path.write_text("JobID|NCPUS|Elapsed|TotalCPU|State\n1|99999999999|01:00:00|00:10:00|COMPLETED\n")
    with pytest.raises(WorkloadError, match=rf"^{path}:2: NCPUS of job 1 is 1e\+11, must be within"):
        load_usage(path)


def test_good_constraints_give_arch_masks(tmp_path):
    path = tmp_path / "ok.txt"
    path.write_text(SACCT_HEAD + sacct_row(constraint="[aarch64*1&x86_64*1]")  # (sacct -P cannot hold '|')
                    + sacct_row(id=8, constraint="aarch64*2") + sacct_row(id=9, constraint="bigmem"))
    w = load_workload(str(path))
    assert w.jobs.arch_mask.tolist() == [3, 1, 0]  # aarch64 or x86_64, aarch64, any
    assert constraint_arch_mask("(aarch64|x86_64)&eu-west") == 3 and constraint_arch_mask("riscv64") == 4
