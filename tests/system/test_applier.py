"""The applier changes the real Slurm only through its own knobs, and journals why."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cycle.decide import addressed
from slurm_plugin.snapshot import Snapshot
from slurm_plugin.snapshot.queue_text import read_jobs
from slurm_plugin.slurm.client import parse_scontrol_oneliner
from slurm_plugin.slurm.sdiag import rpc_stats
from slurm_plugin.decision import (Decision, DrainNodes, Journal, MoveJob, SetPartitionNodes, SetSiteFactor,
                                   SlurmApplier)

pytestmark = pytest.mark.system


@pytest.fixture()
def applier(cluster, tmp_path):
    return SlurmApplier(cluster.client(), Journal(tmp_path / "journal.jsonl"))


@pytest.fixture()
def busy_riscv(slurm):
    """Fill the one RISC-V node so jobs queued behind it stay pending."""
    blocker = slurm.sbatch("-p", "riscv", "-n", "64", "--time=5", "--output=/dev/null", wrap="sleep 120")
    slurm.wait_job(blocker, until=("RUNNING",), timeout=60)
    pending = [slurm.sbatch("-p", "riscv", "-n", "1", "--time=5", "--output=/dev/null", wrap="true")
               for _ in range(2)]
    yield pending
    slurm.cancel(blocker, *pending)


def test_site_factor_raises_priority_of_the_listed_jobs_in_one_call(slurm, applier, busy_riscv):
    low, high = busy_riscv
    time.sleep(1)
    base = {j: int(slurm.show_job(j)["Priority"]) for j in busy_riscv}
    [res] = applier.apply(Decision((SetSiteFactor((high,), 5000, "band 7 of 8"),)))
    assert res.ok, res.error
    assert int(slurm.show_job(high)["Priority"]) >= base[high] + 5000
    assert int(slurm.show_job(low)["Priority"]) < base[high] + 5000
    assert slurm.site_factors(high, low) == {high: 5000, low: 0}  # sprio's SITE column (weighted admin priority)


def test_move_pending_job_to_free_architecture(slurm, applier, busy_riscv, tmp_path):
    job = busy_riscv[0]
    [res] = applier.apply(Decision((MoveJob(job, "x86", "x86_64", "riscv full; x86 has free cores"),)))
    assert res.ok, res.error
    done = slurm.wait_job(job, timeout=60)
    assert done["Partition"] == "x86" and done["NodeList"].startswith("x86n") and done["JobState"] == "COMPLETED"
    result = CliRunner().invoke(main, ["why", "job", str(job), "--journal", str(applier.journal.path)],
                                env={"SLURM_CONF": str(slurm.conf)})
    assert result.exit_code == 0, result.output
    assert "move_job: riscv full; x86 has free cores [ok]" in result.output


def test_drain_is_tagged_and_resume_clears_it(slurm, applier):
    applier.apply(Decision((DrainNodes(("armn3",), "DRAIN", "calendar: leaving arm"),)))
    node = slurm.show_node("armn3")
    assert "DRAIN" in node["State"] and node["Reason"].startswith("hetsched: calendar: leaving arm")
    applier.apply(Decision((DrainNodes(("armn3",), "RESUME", "calendar: back"),)))
    assert "DRAIN" not in slurm.show_node("armn3")["State"]
    kinds = [(e["kind"], e["action"]) for e in applier.journal.about_node("armn3")]
    assert kinds == [("drain", "DRAIN"), ("drain", "RESUME")]


def test_partition_nodes_are_replaced_and_restored(slurm, applier):
    def nodes():
        return parse_scontrol_oneliner(slurm.run("scontrol", "-o", "show", "partition", "x86").stdout)["Nodes"]

    applier.apply(Decision((SetPartitionNodes("x86", ("x86n1",), "test shrink"),)))
    assert nodes() == "x86n1"
    applier.apply(Decision((SetPartitionNodes("x86", ("x86n1", "x86n2"), "test restore"),)))
    assert nodes() == "x86n[1-2]"


def test_a_failing_action_is_journaled_and_the_rest_still_run(slurm, applier):
    results = applier.apply(Decision((MoveJob(999999, "x86", None, "no such job"),
                                      SetPartitionNodes("x86", ("x86n1", "x86n2"), "still applied"))))
    assert [r.ok for r in results] == [False, True]
    assert "Invalid job id" in results[0].error
    assert [e["ok"] for e in applier.journal.entries()] == [False, True]


class CountingClient:
    """The cluster's real client, counting the scontrol commands run (Slurm still answers every one)."""

    def __init__(self, client):
        self.client, self.commands = client, []

    def run(self, *argv, **kw):
        self.commands.append(argv)
        return self.client.run(*argv, **kw)


def test_array_tasks_and_moves_go_to_slurm_batched(slurm, cluster, busy_riscv, tmp_path):
    """Four tasks of one array, each a record of its own, get their SiteFactor in one RPC (``A_[0-3]``), and
    three moves to one partition are one scontrol command, a bad id in it failing alone."""
    array = slurm.sbatch("-p", "riscv", "-n", "1", "--time=6", "--output=/dev/null", "--array=0-4", wrap="true")
    slurm.run("scontrol", "update", f"jobid={array}_[0-3]", "timelimit=5")  # tasks 0-3: records of their own
    tasks = {int(t): int(j) for t, j in (line.split() for line in slurm.run(
        "squeue", "-h", "-r", "-j", str(array), "-o", "%K %A").stdout.split("\n") if line.strip()) if t != "4"}
    assert sorted(tasks) == [0, 1, 2, 3] and len(set(tasks.values())) == 4
    counting = CountingClient(cluster.client())
    applier = SlurmApplier(counting, Journal(tmp_path / "journal.jsonl"))
    ids = tuple(tasks.values())
    base = {j: int(slurm.show_job(j)["Priority"]) for j in ids}
    slurm.run("sdiag", "--reset")
    [res] = applier.apply(Decision((SetSiteFactor(ids, 3000, "band", addresses=tuple(
        (j, f"{array}_{t}") for t, j in tasks.items())),)))
    assert res.ok, res.error
    assert counting.commands == [("scontrol", "update", f"jobid={array}_[0-3]", "sitefactor=3000")]
    update = rpc_stats(slurm.run("sdiag").stdout)[0]["REQUEST_UPDATE_JOB"]
    assert update.count == 1  # a list of 4 ids would be 4 RPCs
    assert all(int(slurm.show_job(j)["Priority"]) >= base[j] + 3000 for j in ids), base
    counting.commands.clear()
    low, high = busy_riscv
    moves = (MoveJob(low, "x86", None, "a"), MoveJob(999999, "x86", None, "gone"), MoveJob(high, "x86", None, "b"))
    results = applier.apply(Decision(moves))
    assert counting.commands[0] == ("scontrol", "update", f"jobid={low},999999,{high}", "partition=x86")
    assert [r.ok for r in results] == [True, False, True]
    assert "Invalid job id" in results[1].error and results[1].failed_ids.keys() == {999999}
    assert [e["ok"] for e in applier.journal.entries()] == [True, True, False, True]
    slurm.cancel(array)


def test_a_pending_stepped_array_record_and_a_job_get_their_site_factor_in_one_command(slurm, cluster, busy_riscv,
                                                                                       tmp_path):
    """squeue writes a pending array's tasks with steps (``1-9:2,20``), which ``scontrol update jobid=A_[...]``
    refuses beside another part: the record is named by its tasks without steps, and all of it is changed, in
    the same command as a plain job, without splitting the record."""
    array = slurm.sbatch("-p", "riscv", "-n", "1", "--time=5", "--output=/dev/null", "--array=1-9:2,20", wrap="true")
    try:
        [record] = [j for j in read_jobs(cluster.client()) if j.job_id == array]
        assert record.array_tasks == "1-9:2,20" and record.task_count == 6
        plain = busy_riscv[0]
        decision = addressed(Decision((SetSiteFactor((plain, array), 2000, "band"),)),
                             Snapshot(jobs=(record,)))
        base = int(slurm.show_job(array)["Priority"])
        counting = CountingClient(cluster.client())
        [res] = SlurmApplier(counting, Journal(tmp_path / "journal.jsonl")).apply(decision)
        assert res.ok, res.error
        assert counting.commands == [("scontrol", "update", f"jobid={plain},{array}_[1,3,5,7,9,20]",
                                      "sitefactor=2000")]
        records = {line.split()[0] for line in slurm.run("squeue", "-h", "-r", "-j", str(array), "-o",
                                                         "%A").stdout.splitlines() if line.strip()}
        assert records == {str(array)}  # still one record: the update named all of it
        assert int(slurm.show_job(array)["Priority"]) >= base + 2000
        assert slurm.site_factors(plain)[plain] == 2000
    finally:
        slurm.cancel(array)
