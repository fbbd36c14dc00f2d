"""Each admission decision through real sbatch -> slurmctld -> job_submit.lua -> hetsched daemon."""

from __future__ import annotations

import time

import pytest
from slurm_plugin.admission.classify import band_site_factor
from tests.system.test_submit_support import SubmitEnv, submit_env

pytestmark = pytest.mark.system


env = submit_env()


def fill(env: SubmitEnv, partition: str, nodes: int) -> int:
    """Run a job that takes every CPU of ``partition`` and wait until the daemon's snapshot sees it."""
    out = env.slurm.run("sbatch", "--parsable", "-p", partition, "-N", str(nodes), "--exclusive", "-o", "/dev/null",
                        "--wrap", "sleep 300")
    job_id = int(out.stdout.strip())
    env.slurm.wait_job(job_id, timeout=60, until=("RUNNING",))
    time.sleep(2.5)  # two refreshes of the daemon's snapshot (--refresh 1)
    return job_id


def test_untyped_gpu_goes_to_gpu_partition(env):
    sub = env.sbatch("--gres=gpu:1")
    assert sub.code == 0, sub.stderr
    job = env.job(sub.job_id)
    assert job["Partition"] == "gpu"
    assert "partition=gpu" in sub.stderr and "can run on a100, h100" in sub.stderr  # slurm.log_user


def test_untyped_npu_goes_to_npu_partition(env):
    sub = env.sbatch("--gres=npu:2")
    assert sub.code == 0, sub.stderr
    assert env.job(sub.job_id)["Partition"] == "npu"


@pytest.mark.parametrize("args, message", [
    (("--gres=gpu:9",), "no node has 9 x gpu"),
    (("--gres=gpu:v100:1",), "no node has gpu type 'v100'"),
    (("--gres=gpu:1", "--constraint=riscv64"), "no riscv64 node has gpu:1"),
    (("--gres=npu:1", "-p", "batch"), "partition batch has no node with npu:1"),
])
def test_impossible_requests_refused_with_a_clear_message(env, args, message):
    sub = env.sbatch(*args)
    assert sub.code != 0 and sub.job_id is None
    assert message in sub.stderr, sub.stderr


def test_typed_gpu_in_its_partition_untouched(env):
    sub = env.sbatch("-p", "gpu", "--gres=gpu:h100:1")
    job = env.job(sub.job_id)
    assert (job["Partition"], job["Features"]) == ("gpu", "(null)")


def test_multi_arch_job_routed_to_free_arch(env):
    free = env.sbatch("--constraint=aarch64|x86_64", "-c", "4")
    assert env.job(free.job_id)["Features"] == "aarch64"  # the arm nodes have the most room
    filler = fill(env, "arm", 3)
    try:
        routed = env.sbatch("--constraint=aarch64|x86_64", "-c", "4")
        pinned = env.sbatch("--constraint=aarch64", "-c", "4")
        assert env.job(routed.job_id)["Features"] == "x86_64"
        assert "routed to x86_64" in routed.stderr
        job = env.job(pinned.job_id)
        assert (job["Features"], job["Partition"]) == ("aarch64", "batch")  # pinned: never moved
    finally:
        env.slurm.cancel(filler)


def test_portable_class_spills_to_riscv_when_arm_and_x86_are_full(env):
    fillers = [fill(env, "arm", 3), fill(env, "x86", 2)]
    try:
        sub = env.sbatch("--comment=class=web")
        job = env.job(sub.job_id)
        assert (job["Partition"], job["Features"]) == ("riscv", "riscv64")
        assert job["Comment"] == "class=web"  # the user's comment is kept
    finally:
        env.slurm.cancel(*fillers)


def test_class_and_tier_set_the_priority_band(env):
    gold = env.sbatch("--comment=class=ai-training", "--gres=gpu:1")
    bronze = env.sbatch("--gres=gpu:1")
    gold_prio = int(env.job(gold.job_id)["Priority"]) if env.job(gold.job_id)["Priority"] != "0" else None
    # held jobs show Priority=0; release them and compare what Slurm computes (SiteFactor adds the band)
    env.slurm.run("scontrol", "release", str(gold.job_id), str(bronze.job_id))
    time.sleep(1)
    gold_prio = int(env.job(gold.job_id)["Priority"])
    bronze_prio = int(env.job(bronze.job_id)["Priority"])
    # SiteFactor = band x BAND_SPAN through the shim (gold band 1030, bronze 0); job size adds a few units
    assert abs(gold_prio - bronze_prio - band_site_factor(1030)) < 1000, (gold_prio, bronze_prio)
    assert env.job(bronze.job_id)["Comment"] == "hetsched:class=batch,tier=bronze"


def test_modify_checked_by_the_daemon(env):
    sub = env.sbatch("-p", "gpu", "--gres=gpu:1")
    offset = env.ctld_log_size()
    bad = env.slurm.run("scontrol", "update", f"jobid={sub.job_id}", "gres=gpu:9", check=False)
    assert bad.returncode != 0  # scontrol prints only "Unspecified error"; slurmctld's log has the reason
    assert "hetsched shim: modify refused: --gres=gpu:9: no node has 9 x gpu" in env.ctld_log_since(offset)
    ok = env.slurm.run("scontrol", "update", f"jobid={sub.job_id}", "gres=gpu:2", check=False)
    assert ok.returncode == 0, ok.stderr
    assert "gpu:2" in env.job(sub.job_id).get("TresPerNode", "")
