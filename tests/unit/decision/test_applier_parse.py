"""Reading a batched ``scontrol update jobid=a,b,c`` failure per id: the lines are what Slurm 22.05.8 printed
(see the applier's module doc); anything that names no asked id is not a per-id failure."""

import pytest

from slurm_plugin.decision import MoveJob, SetSiteFactor
from slurm_plugin.decision.applier import MAX_TASKS_PER_REF, Applied, array_grouped, controller_lost, failed_ids
from slurm_plugin.slurm import SlurmError


@pytest.mark.parametrize("stderr,asked,expected", [
    ("Invalid job id specified for job 99999\n", (4, 99999, 6), {99999: "Invalid job id specified"}),
    ("Invalid job id specified for job 99998\nInvalid job id specified for job 99999\n", (99998, 99999),
     {99998: "Invalid job id specified", 99999: "Invalid job id specified"}),
    ("Job has already finished for job 5\n", (4, 5, 6, 7), {5: "Job has already finished"}),
    ("slurm_update error: Unable to contact slurm controller (connect failure)\n", (4, 6), None),
    ("Invalid job id specified for job 12\n", (4, 6), None),  # not an id we asked about
    ("", (4,), None),
])
def test_failed_ids(stderr, asked, expected):
    assert failed_ids(stderr, asked) == expected


def test_status_of_partial_failed_and_not_attempted():
    act = SetSiteFactor((1, 2, 3), 10, "x")
    assert Applied(act, True).status == "ok"
    assert Applied(act, False, "1 of 3", {2: "gone"}).status == "partial"
    assert Applied(act, False, "3 of 3", {1: "a", 2: "b", 3: "c"}).status == "failed"
    assert Applied(MoveJob(1, "x", None, "r"), False, "no", attempted=False).status == "not-attempted"


@pytest.mark.parametrize("code,stderr,lost", [
    (1, "slurm_update error: Unable to contact slurm controller (connect failure)", True),
    (1, "slurm_update error: Socket timed out on send/recv operation", True),
    (124, "timed out after 30 s", True),
    (1, "Invalid job id specified for job 5", False),
    (1, "Unexpected message received for job 4", False),  # also a dead controller on 22.05: the ping decides
])
def test_controller_lost(code, stderr, lost):
    assert controller_lost(SlurmError(["scontrol", "update"], code, stderr)) is lost


# What 22.05.8 printed for `scontrol update jobid=105007_[3,4,6] sitefactor=9` after task 4 was cancelled (each
# task a record of its own): the tasks it changed, then the one it could not.
ARRAY_LINES = "105007_3,6: No error\n105007_4: Job has already finished\n"
ARRAY_REFS = {"105007_3": 13, "105007_4": 14, "105007_6": 16, "99": 99}


@pytest.mark.parametrize("stderr,expected", [
    (ARRAY_LINES, {14: "Job has already finished"}),
    ("105007_4: Job has already finished\n", {14: "Job has already finished"}),  # 24.11.5: no "No error" line
    ("105007_3-4,6: Invalid job id specified\n", dict.fromkeys((13, 14, 16), "Invalid job id specified")),
    ("Invalid job id specified for job 105007_3,4\n", dict.fromkeys((13, 14), "Invalid job id specified")),
    ("105007_3,5: Job has already finished\n", None),  # task 5 was not asked: not a per-id failure
    ("105007_3,6: No error\n", None),  # nothing failed per id
])
def test_failed_ids_of_array_task_lines(stderr, expected):
    assert failed_ids(stderr, ARRAY_REFS) == expected


@pytest.mark.parametrize("refs,expected", [
    (["5", "30_3", "7", "30_1", "30_2", "40_101", "30_[4-100]"], ["5", "30_[1-3]", "7", "40_101", "30_[4-100]"]),
    (["30_9", "30_5", "30_7", "30_6"], ["30_[5-7,9]"]),
    (["30_2", "30_2"], ["30_2"]),
])
def test_array_grouped(refs, expected):
    assert array_grouped(refs) == expected


def test_array_grouped_bounds_each_reference():
    refs = [f"7_{t}" for t in range(0, 4 * MAX_TASKS_PER_REF + 2, 2)]  # every other task: no ranges
    out = array_grouped(refs)
    assert len(out) == 3 and out[2] == f"7_{4 * MAX_TASKS_PER_REF}"
    assert sum(len(r.split(",")) for r in out) == len(refs)
