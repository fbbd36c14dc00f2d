"""The Slurm client on the real cluster: what differs between Slurm 22.05 and 24.11 is absorbed there."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.system


def test_moving_just_submitted_jobs_survives_transient_answers(slurm):
    """24.11 answers ``scontrol update jobid=N partition=P features=F`` on a job submitted a moment ago with
    "Resource temporarily unavailable" about half the time (for up to 6 s); the client retries, so every move
    lands. Without the retry this fails on 24.11 (22.05 never answers so)."""
    blocker = slurm.sbatch("-p", "riscv", "-n", "64", "--time=5", "--output=/dev/null", wrap="sleep 120")
    jobs: list[int] = []
    try:
        slurm.wait_job(blocker, until=("RUNNING",), timeout=60)
        for _ in range(6):
            jobs.append(slurm.sbatch("-p", "riscv", "-n", "1", "--time=5", "--output=/dev/null", wrap="true"))
            slurm.scontrol_update("jobid", str(jobs[-1]), partition="x86", features="x86_64")
            assert slurm.show_job(jobs[-1])["Partition"] == "x86"
    finally:
        slurm.cancel(blocker, *jobs)
