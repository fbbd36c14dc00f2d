"""A batch script's #HETSCHED intent line through real sbatch -> slurmctld -> job_submit.lua -> hetsched daemon."""

from __future__ import annotations

import datetime as dt

import pytest
from tests.system.test_submit_support import SubmitEnv, submit_env

pytestmark = pytest.mark.system


env = submit_env()


def submit(env: SubmitEnv, tmp_path, lines: list[str]):
    script = tmp_path / "job.sh"
    script.write_text("\n".join(["#!/bin/sh", *lines, "true", ""]))
    proc = env.slurm.run("sbatch", "--parsable", "--hold", "-o", "/dev/null", str(script), check=False)
    job_id = int(proc.stdout.strip().split(";")[0]) if proc.returncode == 0 else None
    return proc, job_id


def test_intent_line_admitted_with_the_derived_settings(env, tmp_path):
    day = (dt.date.today() + dt.timedelta(days=3)).isoformat()
    proc, job_id = submit(env, tmp_path, ["#SBATCH --gres=gpu:1",
                                          f"#HETSCHED intent train on 1 GPU, a100 or h100, for 2 hours, "
                                          f"finish by {day} 12:00"])
    assert proc.returncode == 0, proc.stderr
    job = env.job(job_id)
    assert job["Features"] == "h100|a100" and job["TimeLimit"] == "02:00:00", (proc.stderr, job)
    assert "class=ai-training" in job["Comment"]
    assert f"deadline={day}T12:00" in job["Comment"]  # 22.05's job_submit/lua cannot set Deadline
    assert "intent: class ai-training" in proc.stderr  # told to the user by the shim
    proc, job_id = submit(env, tmp_path, [f"#HETSCHED intent simulate on 2 cores for 1 hour, start {day} 08:00"])
    assert proc.returncode == 0, proc.stderr
    job = env.job(job_id)
    assert job["TimeLimit"] == "01:00:00" and job["EligibleTime"] == f"{day}T08:00:00", job


def test_impossible_intent_refused_with_the_reason(env, tmp_path):
    proc, job_id = submit(env, tmp_path, ["#HETSCHED intent render 500 frames at 3 hours each under 1 EUR"])
    assert proc.returncode != 0 and job_id is None
    assert "over the bound 1 EUR" in proc.stderr, proc.stderr
    proc, job_id = submit(env, tmp_path, ["#HETSCHED intent train on four GPUs"])
    assert proc.returncode != 0 and "column 10" in proc.stderr, proc.stderr


def test_script_without_the_line_is_untouched(env, tmp_path):
    proc, job_id = submit(env, tmp_path, ["#SBATCH -t 5", "# HETSCHED intent is only read at a line start"])
    assert proc.returncode == 0, proc.stderr
    job = env.job(job_id)
    assert job["TimeLimit"] == "00:05:00" and job["Deadline"] == "N/A"


def test_hetsched_submit_intent_passes_the_deadline_to_sbatch(env, tmp_path):
    import os
    import subprocess
    import sys

    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    day = (dt.date.today() + dt.timedelta(days=2)).isoformat()
    run = lambda text: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "slurm_plugin", "submit", "--intent", text, str(script), "--hold", "-o", "/dev/null"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "SLURM_CONF": str(env.root / "etc" / "slurm.conf")})
    ok = run(f"simulate on 2 cores for 30 min, finish by {day} 12:00")
    assert ok.returncode == 0, ok.stderr
    job_id = int(ok.stdout.split()[3])
    job = env.job(job_id)
    assert (job["Deadline"], job["TimeLimit"]) == (f"{day}T12:00:00", "00:30:00")
    refused = run("simulate on 2 cores for 3 days, finish by tomorrow 10:00")
    assert refused.returncode == 1 and "cannot finish by" in refused.stderr
