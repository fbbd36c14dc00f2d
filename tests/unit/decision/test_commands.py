"""Each action maps to exactly the scontrol command lines expected (pure; no Slurm needed)."""

import pytest

from slurm_plugin.decision import DrainNodes, Journal, MoveJob, PowerNodes, SetPartitionNodes, SetSiteFactor
from slurm_plugin.decision.applier import MAX_IDS_PER_CALL, commands_for

CASES = [
    (SetSiteFactor((3, 1, 2), 700, "band 3"), [["scontrol", "update", "jobid=3,1,2", "sitefactor=700"]]),
    (MoveJob(7, "arm", "aarch64", "x"), [["scontrol", "update", "jobid=7", "partition=arm", "features=aarch64"]]),
    (MoveJob(7, None, "", "clear"), [["scontrol", "update", "jobid=7", "features="]]),
    (PowerNodes(("n1", "n2", "n3"), "POWER_UP", "backlog"), [["scontrol", "update", "nodename=n[1-3]",
                                                               "state=POWER_UP"]]),
    (PowerNodes(("n2",), "POWER_DOWN", "idle 600 s"), [["scontrol", "update", "nodename=n2", "state=POWER_DOWN",
                                                        "reason=hetsched: idle 600 s"]]),
    (SetPartitionNodes("dev", ("a1", "a2", "b7"), "nights"), [["scontrol", "update", "partitionname=dev",
                                                               "nodes=a[1-2],b7"]]),
    (DrainNodes(("a1",), "DRAIN", "moving"), [["scontrol", "update", "nodename=a1", "state=DRAIN",
                                               "reason=hetsched: moving"]]),
    (DrainNodes(("a1",), "RESUME", "moved"), [["scontrol", "update", "nodename=a1", "state=RESUME"]]),
]


@pytest.mark.parametrize("action,expected", CASES, ids=[type(c[0]).__name__ for c in CASES])
def test_commands(action, expected):
    assert commands_for(action) == expected


def test_site_factor_is_split_into_bounded_calls():
    ids = tuple(range(1, 2 * MAX_IDS_PER_CALL + 11))
    cmds = commands_for(SetSiteFactor(ids, 100, "x"))
    assert len(cmds) == 3
    assert [int(i) for c in cmds for i in c[2].removeprefix("jobid=").split(",")] == list(ids)


def test_journal_skips_torn_lines(tmp_path):
    j = Journal(tmp_path / "j.jsonl")
    j.record(MoveJob(5, "x86", None, "free"), ok=True, now=1.0)
    with open(j.path, "a") as fh:
        fh.write('{"t": 2, "kind": "mo')  # a crash in the middle of a write
    assert [e["job_id"] for e in j.entries()] == [5]
    assert j.about_job(5)[0]["reason"] == "free" and j.about_job(6) == []
