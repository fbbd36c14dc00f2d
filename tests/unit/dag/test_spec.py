"""The workflow format: valid files load; every problem is reported with FILE:LINE and the field path."""

from __future__ import annotations

import textwrap

import pytest

from slurm_plugin.dag.files import load_workflow
from slurm_plugin.dag.spec import WorkflowError, parse_time, slurm_time

GOOD = """\
name: render
tasks:
  - {name: split, runtime_s: 20}
  - name: frames
    after: [{task: split, data_gb: 2}]
    array: 8
    arch: [x86_64, aarch64]
    class: video-render
  - {name: encode, after: [frames], gpu: {count: 1, types: [a100, h100]}, time: "00:10:00"}
"""


def _write(tmp_path, text):
    p = tmp_path / "wf.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def test_good_workflow_loads(tmp_path):
    wf = load_workflow(_write(tmp_path, GOOD))
    assert [t.name for t in wf.tasks] == ["split", "frames", "encode"]
    frames = wf.task("frames")
    assert frames.array == 8 and frames.workload_class == "video-render"
    assert frames.edges[0].data_gb == 2
    assert wf.task("encode").accel[0] == "gpu" and wf.task("encode").limit_s == 600
    assert wf.task("split").limit_s == 60  # default: 2 x runtime, at least a minute


@pytest.mark.parametrize("text, expected", [
    ("name: w\ntasks:\n  - {name: a}\n  - {name: b, aftr: [a]}\n",
     ["wf.yaml:4: tasks[1]: unknown key 'aftr'; did you mean 'after'?"]),
    ("name: w\ntasks:\n  - {name: a}\n  - name: b\n    cores: many\n",
     ["wf.yaml:5: tasks[1].cores: Input should be a valid integer"]),
    ("name: w\ntasks:\n  - {name: a, after: [c]}\n  - {name: b, after: [a]}\n",
     ["wf.yaml:3: tasks[0].after[0]: no task named 'c'"]),
    ("name: w\ntasks:\n  - {name: a, after: [b]}\n  - {name: b, after: [a]}\n",
     ["dependency cycle: "]),
    ("name: w\ntasks:\n  - {name: a, constraint: 'x86_64&&'}\n",
     ["wf.yaml:3: tasks[0].constraint: constraint 'x86_64&&'"]),
    ("name: w\ntasks:\n  - {name: a, time: 'soon'}\n", ["tasks[0].time: time 'soon' is not a Slurm time"]),
    ("name: w\ntasks:\n  - {name: a, gpu: {count: 1}, npu: {count: 1}}\n", ["at most one accelerator kind"]),
    ("name: w\ntasks:\n  - {name: a}\n  - {name: a}\n", ["wf.yaml:4: tasks[1].name: duplicate task name 'a'"]),
    ("name: w\ntasks: [\n", ["not valid YAML"]),
])
def test_problems_name_line_and_field(tmp_path, text, expected):
    with pytest.raises(WorkflowError) as err:
        load_workflow(_write(tmp_path, text))
    msg = str(err.value)
    for part in expected:
        assert part in msg, msg


def test_every_problem_at_once(tmp_path):
    text = "name: w\ntasks:\n  - {name: a, cores: 0}\n  - {name: b, mem_gb: -1}\n"
    with pytest.raises(WorkflowError) as err:
        load_workflow(_write(tmp_path, text))
    assert "2 problem(s)" in str(err.value) and "wf.yaml:3:" in str(err.value) and "wf.yaml:4:" in str(err.value)


@pytest.mark.parametrize("text, secs", [("10", 600), ("01:30", 90), ("1:00:00", 3600), ("1-02", 93600),
                                        ("1-00:00:30", 86430), (45, 45)])
def test_parse_time(text, secs):
    assert parse_time(text) == secs


def test_slurm_time_rounds_up_to_a_minute():
    assert slurm_time(5) == "0-00:01:00" and slurm_time(3661.2) == "0-01:01:02"


SCRIPT = """\
#!/bin/bash
#HETSCHED workflow render
#HETSCHED task split cores=2 runtime_s=20
./split.sh scene
#HETSCHED task frames after=split array=24 arch=x86_64,aarch64 class=video-render runtime_s=120
./render.sh $HETSCHED_TASK_INDEX
echo done
#HETSCHED task encode after=frames gpu=1:a100|h100 runtime_s=300
./encode.sh
"""


def test_batch_script_form(tmp_path):
    p = tmp_path / "render.sh"
    p.write_text(SCRIPT)
    wf = load_workflow(p)
    assert wf.name == "render" and [t.name for t in wf.tasks] == ["split", "frames", "encode"]
    frames = wf.task("frames")
    assert frames.array == 24 and frames.arch == ("x86_64", "aarch64") and frames.edges[0].task == "split"
    assert frames.command == "./render.sh $HETSCHED_TASK_INDEX\necho done"
    assert wf.task("encode").gpu.types == ("a100", "h100") and wf.task("encode").gpu.count == 1


def test_batch_script_errors_name_the_task_line(tmp_path):
    p = tmp_path / "bad.sh"
    p.write_text(SCRIPT.replace("array=24", "array=lots").replace("after=frames", "after=frame"))
    with pytest.raises(WorkflowError) as err:
        load_workflow(p)
    assert "bad.sh:5: tasks[1].array:" in str(err.value)
    p.write_text(SCRIPT.replace("after=frames", "after=frame"))
    with pytest.raises(WorkflowError, match=r"bad.sh:8: tasks\[2\].after\[0\]: no task named 'frame'; did you mean 'frames'"):
        load_workflow(p)


def test_yaml_alias_bomb_is_refused(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
              f"*a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 9)]
    p = _write(tmp_path, "\n".join(lines) + "\nname: w\ntasks:\n  - {name: t, after: *a8}\n")
    with pytest.raises(WorkflowError, match="YAML aliases"):
        load_workflow(p)
