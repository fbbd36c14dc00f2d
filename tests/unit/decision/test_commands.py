"""Each action maps to exactly the scontrol command lines expected (pure; no Slurm needed)."""

import pytest

from slurm_plugin.decision import DrainNodes, Journal, MoveJob, PowerNodes, SetPartitionNodes, SetSiteFactor
from slurm_plugin.decision.actions import RequeueJobs
from slurm_plugin.decision.applier import MAX_ID_LIST_CHARS, commands_for, id_lists, move_commands, move_groups
from slurm_plugin.slurm import SlurmClient, SlurmError

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


def test_site_factor_is_split_into_calls_bounded_by_length():
    ids = tuple(range(1_000_000, 1_030_000))  # 30,000 seven-digit ids: 239,999 characters
    cmds = commands_for(SetSiteFactor(ids, 100, "x"))
    assert len(cmds) == 3
    assert all(len(c[2].removeprefix("jobid=")) <= MAX_ID_LIST_CHARS for c in cmds)
    assert [int(i) for c in cmds for i in c[2].removeprefix("jobid=").split(",")] == list(ids)
    assert len(commands_for(SetSiteFactor(ids[:10_000], 100, "x"))) == 1  # 10,000 ids: one scontrol, not 20


def test_requeue_is_split_the_same_way():
    cmds = commands_for(RequeueJobs(tuple(range(1_000_000, 1_030_000)), "x"))
    assert [c[:2] for c in cmds] == [["scontrol", "requeue"]] * 3


@pytest.mark.parametrize("refs,limit,expected", [
    ([], 10, []),
    (["1", "22", "333"], 8, ["1,22,333"]),  # exactly 8 characters
    (["1", "22", "333"], 7, ["1,22", "333"]),
    (["123456789"], 4, ["123456789"]),  # one ref longer than the limit still goes, alone
    (["1", "123456789", "2"], 4, ["1", "123456789", "2"]),
])
def test_id_lists(refs, limit, expected):
    assert id_lists(refs, limit) == expected


def test_journal_skips_torn_lines(tmp_path):
    j = Journal(tmp_path / "j.jsonl")
    j.record(MoveJob(5, "x86", None, "free"), ok=True, now=1.0)
    with open(j.path, "a") as fh:
        fh.write('{"t": 2, "kind": "mo')  # a crash in the middle of a write
    assert [e["job_id"] for e in j.entries()] == [5]
    assert j.about_job(5)[0]["reason"] == "free" and j.about_job(6) == []


def test_moves_to_one_destination_are_one_command():
    moves = [MoveJob(5, "x86", "x86_64", "a"), MoveJob(6, "arm", None, "b"), MoveJob(7, "x86", "x86_64", "c"),
             MoveJob(8, "x86", "x86_64", "d", addresses=((8, "8_[2-9]"),))]
    groups = move_groups(moves)
    assert [[m.job_id for m in g] for g in groups] == [[5, 7, 8], [6]]
    assert [move_commands(g) for g in groups] == [
        [["scontrol", "update", "jobid=5,7,8_[2-9]", "partition=x86", "features=x86_64"]],
        [["scontrol", "update", "jobid=6", "partition=arm"]]]


def test_a_job_moved_twice_keeps_its_order():
    """The second move of job 5 goes in a group applied after the first: the last move still wins."""
    moves = [MoveJob(5, "x86", None, "a"), MoveJob(6, "arm", None, "b"), MoveJob(5, "arm", None, "c"),
             MoveJob(7, "x86", None, "d")]
    assert [[(m.job_id, m.partition) for m in g] for g in move_groups(moves)] == [
        [(5, "x86"), (7, "x86")], [(6, "arm"), (5, "arm")]]
    moves = [MoveJob(5, "x86", None, "a"), MoveJob(5, "arm", None, "b"), MoveJob(5, "x86", None, "c")]
    assert [[(m.job_id, m.partition) for m in g] for g in move_groups(moves)] == [
        [(5, "x86")], [(5, "arm")], [(5, "x86")]]


def test_consecutive_power_actions_that_tell_slurm_the_same_are_one_command():
    """POWER_UP sends no reason: the remediation's one-node retries (each its own reason) go as one hostlist;
    POWER_DOWN only with the same reason."""
    from slurm_plugin.decision.applier import batch_key, run_commands

    ups = [PowerNodes(("n1",), "POWER_UP", "retry 1/2"), PowerNodes(("n3", "n2"), "POWER_UP", "backlog"),
           PowerNodes(("n2",), "POWER_UP", "retry 2/2")]
    assert len({batch_key(a) for a in ups}) == 1
    assert run_commands(ups) == [["scontrol", "update", "nodename=n[1-3]", "state=POWER_UP"]]
    downs = [PowerNodes(("n4",), "POWER_DOWN", "idle 600 s"), PowerNodes(("n5",), "POWER_DOWN", "idle 900 s")]
    assert batch_key(downs[0]) != batch_key(downs[1]) != batch_key(ups[0])
    assert batch_key(SetPartitionNodes("dev", ("a1",), "x")) is None


def test_a_large_band_with_addresses_is_named_in_linear_time():
    """50,000 split array tasks in one band: a scan of the addresses per job took minutes (25,000 jobs of a
    band at 100,000 pending); one look-up table takes well under a CPU second."""
    import time

    ids = tuple(range(1_000_000, 1_050_000))
    action = SetSiteFactor(ids, 10, "band", addresses=tuple((j, f"7_{j - 1_000_000}") for j in ids))
    t0 = time.process_time()
    cmds = commands_for(action)
    assert time.process_time() - t0 < 10.0
    assert [c[2] for c in cmds] == ["jobid=" + ",".join(f"7_[{i}-{i + 4999}]" for i in range(0, 50000, 5000))]


def test_a_command_that_cannot_be_run_is_a_slurm_error_of_its_own():
    """An argument over Linux's MAX_ARG_STRLEN (128 KiB) makes exec fail (E2BIG): the command fails as a
    SlurmError the applier records, not an OSError that ends the cycle."""
    with pytest.raises(SlurmError) as err:
        SlurmClient().run("true", "x" * 200_000)
    assert err.value.code == 126 and "200,000 characters" in str(err.value)


def test_cancel_splits_its_ids_to_fit_one_exec():
    """25,000 ids go to scancel in commands of at most CANCEL_CHUNK ids, in order (what is exec'd is recorded;
    nothing is run)."""
    import subprocess

    from slurm_plugin.slurm.client import CANCEL_CHUNK

    class Recording(SlurmClient):
        def __init__(self):
            super().__init__()
            self.argv: list[list[str]] = []

        def _run_once(self, cmd, input, timeout, env):
            self.argv.append(cmd)
            return subprocess.CompletedProcess(cmd, 0, "", "")

    client = Recording()
    client.cancel(*range(1, 25_001))
    assert [len(c) - 1 for c in client.argv] == [CANCEL_CHUNK, CANCEL_CHUNK, 5_000]
    assert {c[0] for c in client.argv} == {"scancel"}
    assert [int(i) for c in client.argv for i in c[1:]] == list(range(1, 25_001))
