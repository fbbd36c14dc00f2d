"""The compact queue reader (``squeue -O`` text) against real captured output: the same jobs as the JSON of the
same queue (Slurm 22.05.8, captured one after the other on the local cluster), pending arrays folded into one
record, and text a user wrote that cannot forge a field or a record."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from slurm_plugin.snapshot.arrays import task_count, task_expr, task_ids, task_ranges
from slurm_plugin.snapshot.parse import parse_jobs
from slurm_plugin.snapshot.queue_text import (FIELDS, QueueTextError, SteppedArrayError, parse_squeue_text,
                                               squeue_argv)

DATA = Path(__file__).parent / "data"
FIELD_END, RECORD_END = "\x1f", "\x1e0123456789ab"  # what the capture used
TEXT = (DATA / "squeue-O-22.05.txt").read_text()


def _expand(expr: str) -> set[int]:
    out: set[int] = set()
    for part in expr.split(","):
        span, _, step = part.partition(":")
        lo, _, hi = span.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1, int(step or 1)))
    return out


@pytest.fixture(scope="module")
def jobs():
    return {j.job_id: j for j in parse_squeue_text(TEXT, FIELD_END, RECORD_END)}


def test_the_text_reads_as_the_json_of_the_same_queue(jobs):
    """Every field the snapshot keeps, job by job; memory as the total each job asks (a job on one node with one
    CPU reads the same either way), a pending array's tasks as a set (Slurm may write them either way)."""
    want = {j.job_id: j for j in parse_jobs(json.loads((DATA / "squeue-22.05-same-queue.json").read_text()),
                                            keep_finished=True)}
    assert set(jobs) == set(want) and len(jobs) == 10

    def total_mem(j):
        return (j.memory_per_node_mb or 0) * (j.node_count or 1) or (j.memory_per_cpu_mb or 0) * (j.cpus or 1)

    for job_id, job in jobs.items():
        ref = want[job_id]
        assert total_mem(job) == total_mem(ref), job_id
        assert _expand(job.array_tasks or "0") == _expand(ref.array_tasks or "0"), job_id
        same = dict(memory_per_node_mb=None, memory_per_cpu_mb=None, array_tasks="")
        assert dataclasses.replace(job, **same) == dataclasses.replace(ref, **same), job_id


def test_a_pending_array_is_one_record_with_its_task_count_and_address(jobs):
    """sbatch --array=0-99:3%4 with tasks 3 and 6 split off by an update: squeue -r printed the array's record
    once per task (32 lines, one JobID); here it is one record again, named to Slurm by its tasks."""
    array = jobs[19]
    assert (array.array_job_id, array.array_task_id, array.task_count) == (19, None, 32)
    assert array.array_tasks == "0,9-99:3"  # squeue's steps; scontrol reads none beside another part:
    assert array.slurm_id == "19_[" + ",".join(map(str, [0, *range(9, 100, 3)])) + "]"
    split = [j for j in jobs.values() if j.array_job_id == 19 and j.job_id != 19]
    assert sorted((j.array_task_id, j.slurm_id, j.task_count) for j in split) == [(3, "20", 1), (6, "21", 1)]
    assert sum(j.task_count for j in jobs.values() if j.array_job_id == 19) == 34  # 0-99:3


def test_user_text_stays_in_its_field(jobs):
    newline = jobs[17]
    assert newline.name == "a name\nwith a newline" and newline.partition == "riscv"
    assert newline.comment == "hetsched:class=web x=1 Partition=gpu"
    assert jobs[18].held and jobs[18].reason == "JobHeldAdmin" and jobs[18].memory_per_cpu_mb == 500
    assert jobs[15].nodes == "armn[1-2]" and jobs[15].memory_per_node_mb == 2048 and jobs[15].node_count == 2
    assert jobs[22].gres[0].name == "gpu" and jobs[22].features == "a100|h100"


@pytest.mark.parametrize("forge", [
    lambda t: t.replace("a name\nwith", "a name\x1fwith"),  # one field too many
    lambda t: t.replace("x=1 Partition=gpu", "x=1\x1e0123456789ff" + "\x1f" * (len(FIELDS) - 1)),  # no nonce
    lambda t: t[:-3],  # cut short
])
def test_text_that_does_not_split_into_the_fields_asked_for_is_refused(forge):
    with pytest.raises(QueueTextError):
        parse_squeue_text(forge(TEXT), FIELD_END, RECORD_END)


def test_the_command_asks_every_field_with_the_separators():
    argv = squeue_argv(FIELD_END, RECORD_END)
    assert argv[:6] == ["squeue", "--all", "-t", "all", "-r", "-h"]
    assert argv[-1].count(FIELD_END) == len(FIELDS) - 1 and argv[-1].endswith(f"Comment:{RECORD_END}")


@pytest.mark.parametrize("ids, expr", [([3, 4, 5, 9], "3-5,9"), ([0, 9, 12, 15, 18], "0,9-18:3"), ([3, 4], "3-4"),
                                       ([1, 3], "1,3"), ([7], "7")])
def test_task_ids_collapse_as_slurm_writes_them(ids, expr):
    assert task_expr(ids) == expr and task_count(expr) == len(ids) and task_ids(expr) == ids


@pytest.mark.parametrize("expr, ranges", [("1-79:2,100", ",".join(map(str, [*range(1, 80, 2), 100]))),
                                           ("0-9:3", "0,3,6,9"), ("4-100", "4-100"), ("5,1-3", "1-3,5"), ("7", "7")])
def test_task_ranges_never_write_a_step_for_scontrol(expr, ranges):
    assert task_ranges(task_ids(expr)) == ranges and ":" not in ranges


def test_task_count_reads_steps_and_throttles_and_refuses_a_cut_expression():
    assert task_count("0-99%5") == 100 and task_count("1,3,5-7") == 5 and task_count("0-9:2") == 5
    with pytest.raises(ValueError, match="66..."):
        task_count("0,9,12,66...%4")


def _array_lines(job_id: int, ids: list[int]) -> str:
    """squeue -r's lines of one pending array's record, one per task id (every other field as a plain job)."""
    fields = {"JobID": str(job_id), "ArrayJobID": str(job_id), "State": "PENDING", "NumCPUs": "1", "NumNodes": "1",
              "MinMemory": "1G", "TimeLimit": "10:00", "PriorityLong": "100", "UserID": "0"}
    return "".join(FIELD_END.join(fields.get(f, str(i) if f == "ArrayTaskID" else "") for f in FIELDS)
                   + RECORD_END + "\n" for i in ids)


@pytest.mark.parametrize("ids, cut", [
    (list(range(1, 12, 2)), True),  # 1-11:2 as printed for 1-13:2 (six of its seven tasks): may be cut
    (list(range(0, 97, 3)), True),  # 0-99:3 printed 0..96
    (list(range(1, 10, 2)), False),  # five ids: Slurm writes up to six as a list, which expands whole
    (list(range(0, 64)), False),  # step 1: whole
    ([0, *range(9, 100, 3)], False),  # 0,9-99:3: not one run, written as a list
])
def test_a_stepped_array_that_squeue_may_print_one_short_is_read_from_the_json(ids, cut):
    """Slurm writes a task set that is one stepped run of 7 or more as a-b:s, and squeue -r expands it without
    the last id (checked on 22.05.8 and 24.11.5: 1-13:2 prints six lines)."""
    text = _array_lines(7, ids)
    if cut:
        with pytest.raises(SteppedArrayError, match="pending array 7"):
            parse_squeue_text(text, FIELD_END, RECORD_END)
    else:
        (job,) = parse_squeue_text(text, FIELD_END, RECORD_END)
        assert job.task_count == len(ids) and task_count(job.array_tasks) == len(ids)
