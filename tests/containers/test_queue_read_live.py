"""The snapshot's queue reader on the container cluster's Slurm (22.05 on bookworm, 24.11 on trixie): the compact
``squeue -O`` text and ``squeue --json`` read the same records, held jobs and pending arrays included, and the
client's Slurm settings reach the commands inside the container (a pending array's long task expression whole)."""

from __future__ import annotations

import pytest

from slurm_plugin.snapshot.queue_text import read_jobs
from tests.system.test_queue_live import assert_readers_agree

pytestmark = pytest.mark.containers
QUIET = ("-D", "/tmp", "-o", "/dev/null")
ODD = ",".join(str(i) for i in range(1, 80, 2)) + ",100"  # 41 tasks, longer than 22.05's 64 characters


def test_the_compact_reader_reads_what_the_json_says(cluster, caplog):
    s = cluster.client("alice")
    jobs = [s.sbatch(*QUIET, "-p", "x86", "-n", "2", "--mem-per-cpu=100M", "-t", "5", "-H", wrap="true"),
            s.sbatch(*QUIET, "-p", "x86", "-t", "5", f"--array={ODD}", "--begin=now+3600",
                     "--comment=x Partition=gpu", wrap="true"),
            s.sbatch(*QUIET, "-p", "gpu", "--gres=gpu:1", "--mem=1G", "-t", "5", "--begin=now+3600", wrap="true")]
    try:
        text = assert_readers_agree(s, jobs, caplog, finished=False)  # 24.11's JSON lists no ended job
        assert text[jobs[0]].held and text[jobs[1]].task_count == 41
        assert text[jobs[1]].comment == "x Partition=gpu"  # the JSON agreed on 41 tasks: SLURM_BITSTR_LEN=0
    finally:
        s.cancel(*jobs)


def test_a_stepped_array_is_read_whole(cluster):
    """``--array=1-13:2`` is kept as ``1-13:2``, which ``squeue -r`` prints one task short on both releases; the
    reader takes that array from the JSON (seven tasks), logged at INFO. The record is named to scontrol by its
    tasks without the step (slurmctld's parser leaves out a step's last task the same way), and an update by that
    name changes all seven tasks as one record."""
    s = cluster.client("alice")
    job = s.sbatch(*QUIET, "-p", "x86", "-t", "5", "--array=1-13:2", "--begin=now+3600", wrap="true")
    try:
        assert len(s.run("squeue", "-r", "-h", "-o", "%K", "-j", str(job)).stdout.split()) == 6  # Slurm's cut
        (array,) = [j for j in read_jobs(s) if j.job_id == job]
        assert array.task_count == 7 and array.slurm_id == f"{job}_[1,3,5,7,9,11,13]"
        s.run("scontrol", "update", f"jobid={array.slurm_id}", "timelimit=4")
        records = [j for j in read_jobs(s) if j.array_job_id == job or j.job_id == job]
        assert [(r.task_count, r.time_limit_min) for r in records] == [(7, 4)], records
    finally:
        s.cancel(job)


def test_an_ended_job_is_read_with_its_times(cluster):
    """The guard follows a job to its end (``Snapshot.finished``): the compact reader lists an ended job Slurm
    still remembers, with its start and end, on both releases (24.11's ``squeue --json`` lists none)."""
    s = cluster.client("alice")
    job = s.sbatch(*QUIET, "-p", "x86", "-t", "5", wrap="true")
    s.wait_job(job, timeout=120)
    (ended,) = [j for j in read_jobs(s) if j.job_id == job]
    assert ended.state == "COMPLETED" and 0 < ended.start_time <= ended.end_time, ended
