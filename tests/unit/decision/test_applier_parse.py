"""Reading a batched ``scontrol update jobid=a,b,c`` failure per id: the lines are what Slurm 22.05.8 printed
(see the applier's module doc); anything that names no asked id is not a per-id failure."""

import pytest

from slurm_plugin.decision import MoveJob, SetSiteFactor
from slurm_plugin.decision.applier import Applied, controller_lost, failed_ids
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
