"""The job queue as the cycle reads and acts on it, on the real cluster: held jobs left alone, a pending job
array kept as one record and addressed as Slurm accepts it, and the compact queue reader."""

from __future__ import annotations

import dataclasses
import time

import pytest

from slurm_plugin.cycle import CycleConfig
from slurm_plugin.cycle.policy import live_ranker
from slurm_plugin.cycle.runner import CycleRunner
from slurm_plugin.decision import SetSiteFactor
from slurm_plugin.policy.spec import RankingSpec
from slurm_plugin.snapshot import collect_snapshot
from slurm_plugin.snapshot.arrays import task_count
from slurm_plugin.snapshot.parse import ACTIVE_STATES, parse_jobs
from slurm_plugin.snapshot.queue_text import read_jobs
from tests.system.conftest import Needs, cluster_fixture

pytestmark = pytest.mark.system
RANK_ONLY = CycleConfig(pack=False, reshape=False, power=False, wipe=False)

c = cluster_fixture("queue", Needs())


@pytest.fixture(scope="module")
def blocked(c):
    """The RISC-V node filled by a blocker, so 1-core jobs for it pend (reason Resources/Priority)."""
    s = c.client()
    blocker = s.sbatch("-p", "riscv", "-n", "64", "--time=10", "--output=/dev/null", wrap="sleep 600")
    try:
        s.wait_job(blocker, until=("RUNNING",), timeout=90)
        yield s
    finally:
        s.cancel(blocker)


def _pending(s, *args: str) -> int:
    return s.sbatch("-p", "riscv", "-n", "1", "--time=30", "--output=/dev/null", *args, wrap="true")


def _wait(what, check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not (got := check()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert got, f"{what} within {timeout:.0f} s"
    return got


def _cycle(c, tmp_path) -> list:
    runner = CycleRunner(c.site(), c.client(), RANK_ONLY, tmp_path, ranker=live_ranker(RankingSpec(name="sjf")))
    decision, results = runner.run_once()
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    return [a for a in decision.actions if isinstance(a, SetSiteFactor)]


@pytest.mark.parametrize("hold", ["hold", "uhold"])
def test_a_held_job_is_neither_ranked_nor_released(c, blocked, tmp_path, hold):
    """``scontrol hold`` (admin) and ``uhold`` (user): the cycle ranks the other pending job and leaves the held
    one alone: still held after the cycle, and once its owner releases it, no SiteFactor of the suite's."""
    s = blocked
    free, held = _pending(s), _pending(s)
    try:
        s.run("scontrol", hold, str(held))
        snap = _wait("the hold in the snapshot", lambda: collect_snapshot(s))
        by_id = {j.job_id: j for j in snap.jobs}
        assert by_id[held].held and not by_id[free].held, (by_id[held], by_id[free])
        set_on = {j for a in _cycle(c, tmp_path) for j in a.job_ids}
        assert free in set_on and held not in set_on
        job = s.show_job(held)
        assert (job["Priority"], job["Reason"]) == ("0", "JobHeldUser" if hold == "uhold" else "JobHeldAdmin")
        s.run("scontrol", "release", str(held))
        factors = _wait("both jobs in sprio", lambda: (f := s.site_factors(free, held)) and len(f) == 2 and f)
        assert factors[held] == 0 and factors[free] != 0, factors
    finally:
        s.cancel(free, held)


def test_a_pending_array_is_one_record_and_ranked_as_one(c, blocked, tmp_path):
    """A pending array of 10 tasks with task 0 split off (an update of that task): the snapshot has the array's
    record with its 9 tasks and the task's own record; the cycle's SiteFactor reaches every task of the record
    through ``<id>_[1-9]`` and the record stays one (slurmctld splits a record whose tasks are named in part)."""
    s = blocked
    array = s.sbatch("-p", "riscv", "-n", "1", "--time=30", "--output=/dev/null", "--array=0-9", wrap="true")
    try:
        s.run("scontrol", "update", f"jobid={array}_0", "timelimit=29")
        records = [j for j in collect_snapshot(s).jobs if j.array_job_id == array]
        assert sorted((j.array_task_id, j.array_tasks, j.task_count) for j in records if j.array_tasks) == [
            (None, "1-9", 9)]
        assert [(j.array_task_id, j.task_count) for j in records if not j.array_tasks] == [(0, 1)]
        actions = _cycle(c, tmp_path)
        factor = {j: a.site_factor for a in actions for j in a.job_ids}
        assert array in factor and any((array, f"{array}_[1-9]") in a.addresses for a in actions)
        after = [j for j in collect_snapshot(s).jobs if j.array_job_id == array]
        assert sorted(j.task_count for j in after) == [1, 9]  # still the array's record and task 0's
        split = next(j.job_id for j in after if j.array_task_id == 0)
        assert factor[array] != factor[split]  # sjf: task 0 is a minute shorter
        got = _wait("sprio listing both", lambda: (f := s.site_factors(array, split)) and len(f) == 2 and f)
        assert got == {array: factor[array], split: factor[split]}
    finally:
        s.cancel(array)


def _memory(j) -> int:
    return (j.memory_per_node_mb or 0) * (j.node_count or 1) + (j.memory_per_cpu_mb or 0) * (j.cpus or 1)


def assert_readers_agree(client, job_ids: list[int], caplog, finished: bool = True) -> dict:
    """Read the queue with the snapshot's ``squeue -O`` reader between two ``squeue --json`` reads: the same
    records (``job_ids`` among them), each equal field by field to its JSON record of one of the two reads (a job's
    reason or priority may change between reads), without falling back to the JSON; returns the compact reader's
    records by id. Memory is compared as the job's total (the text cannot tell per node from per CPU for one CPU
    on one node) and a pending array by its task count (the JSON's task expression may be written otherwise).
    ``finished=False``: pending and running records only (24.11's ``squeue --json`` lists no ended job)."""
    reader = "slurm_plugin.snapshot.queue_text"
    caplog.set_level("INFO", logger=reader)  # a fallback to the JSON is logged at INFO (a stepped array) or WARNING
    before = {j.job_id: j for j in parse_jobs(client.squeue(), keep_finished=finished)}
    caplog.clear()
    text = {j.job_id: j for j in read_jobs(client)}
    fallbacks = [r.getMessage() for r in caplog.records if r.name == reader]
    after = {j.job_id: j for j in parse_jobs(client.squeue(), keep_finished=finished)}
    if not finished:
        text = {i: j for i, j in text.items() if j.state in ACTIVE_STATES}
    assert not fallbacks, fallbacks
    assert set(job_ids) <= set(text) and set(before) & set(after) <= set(text) <= set(before) | set(after)

    def comparable(j):
        same = dict(memory_per_node_mb=None, memory_per_cpu_mb=None, array_tasks="")
        return dataclasses.replace(j, **same), _memory(j), task_count(j.array_tasks or "0")

    for job_id, job in text.items():
        refs = [r for r in (before.get(job_id), after.get(job_id)) if r is not None and r.state == job.state]
        if refs:  # none: a job that started or ended between the reads
            assert comparable(job) in [comparable(r) for r in refs], (job, refs)
    return text


def test_the_compact_reader_reads_what_the_json_says(c, blocked, caplog):
    """``squeue -O`` text (the snapshot's reader) and ``squeue --json`` on one real queue: a running job, a held
    one, an array with a task split off, a GPU job with per-node memory and a comment a user wrote."""
    s = blocked
    jobs = [s.sbatch("-p", "riscv", "-n", "2", "--mem-per-cpu=300M", "--time=1-0", "--output=/dev/null", "-H",
                     wrap="true"),
            s.sbatch("-p", "riscv", "-n", "1", "--time=20", "--output=/dev/null", "--array=0-30:2%3",
                     "--comment=x Partition=gpu\nJobId=1", wrap="true"),
            s.sbatch("-p", "gpu", "--gres=gpu:1", "--mem=3G", "--time=10", "--output=/dev/null",
                     "--begin=now+3600", "--constraint=a100|h100", wrap="true")]
    try:
        s.run("scontrol", "update", f"jobid={jobs[1]}_4", "timelimit=19")
        # 24.11's squeue --json lists no ended job (the earlier tests' jobs), squeue -O does: active ones only there
        text = assert_readers_agree(s, jobs, caplog, finished=(s.version.major, s.version.minor) < (24, 11))
        assert text[jobs[1]].task_count == 15 and text[jobs[1]].comment == "x Partition=gpu\nJobId=1"
        assert text[jobs[0]].held and _memory(text[jobs[2]]) == 3072
    finally:
        s.cancel(*jobs)


def test_a_name_with_the_field_separator_sends_the_read_to_the_json(c, blocked, caplog):
    """A user may put any byte in a job name: one with the unit separator makes its record one field too long,
    and the whole read comes from ``squeue --json`` instead (logged), with that job in it."""
    s = blocked
    job = s.sbatch("-p", "riscv", "-n", "1", "--time=5", "--output=/dev/null", "-J", "a\x1fb", wrap="true")
    try:
        caplog.set_level("WARNING", logger="slurm_plugin.snapshot.queue_text")
        jobs = {j.job_id: j for j in read_jobs(s)}
        assert "squeue --json instead" in caplog.text and "fields, not" in caplog.text
        assert jobs[job].name == "a\x1fb"
    finally:
        s.cancel(job)
