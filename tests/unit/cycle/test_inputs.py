"""Which pending jobs the cycle may move, and how they look to packing."""

import pytest

from slurm_plugin.cycle.decide import bands_from
from slurm_plugin.cycle.inputs import allowed_archs, packing_jobs
from slurm_plugin.decision import Decision, SetSiteFactor
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import GresCount, JobState, Snapshot

SITE = load_site("demo")


@pytest.mark.parametrize("features,comment,archs,flexible", [
    ("aarch64|x86_64", "", ("aarch64", "x86_64"), True),
    ("[aarch64|x86_64]", "", ("aarch64", "x86_64"), True),
    ("x86_64", "hetsched:class=web,flex=aarch64|x86_64", ("aarch64", "x86_64"), True),
    ("", "class=web", ("x86_64", "aarch64", "riscv64"), True),     # portable class, no constraint
    ("", "class=ai-training", (), False),                           # not portable
    ("x86_64", "", ("x86_64",), False),                             # the user chose
    ("x86_64&smartnic", "", ("x86_64",), False),                    # pinned, and packing counts it on x86_64 only
    ("aarch64|h100", "", (), False),                                # not an OR of arches only
])
def test_allowed_archs(features, comment, archs, flexible):
    job = JobState(1, "PENDING", features=features, comment=comment)
    assert allowed_archs(job, SITE) == (archs, flexible)


def test_packing_jobs_order_and_resources():
    jobs = (JobState(5, "PENDING", partition="gpu", cpus=8, node_count=1, memory_per_node_mb=4096,
                     gres=(GresCount("gpu", "a100", 2),), time_limit_min=120, comment="class=ai-training"),
            JobState(3, "PENDING", partition="batch", features="aarch64|x86_64", cpus=4),
            JobState(4, "PENDING", partition="batch", reason="JobHeldUser"),
            JobState(6, "RUNNING", partition="batch"))
    out = packing_jobs(Snapshot(jobs=jobs), SITE, bands={5: 7})
    assert [p.job_id for p in out] == ["5", "3"]
    gpu = out[0]
    assert gpu.per_job.accels == 2 and gpu.per_job.mem_gb == 4 and gpu.hours == 2 and gpu.band == 7
    assert gpu.accel_types == ("a100",) and gpu.pinned and gpu.workload == "ai-training"
    assert not out[1].pinned and out[1].workload == "batch"


def test_a_pending_arrays_record_asks_packing_for_all_its_tasks():
    array = JobState(7, "PENDING", partition="batch", features="aarch64|x86_64", cpus=4, node_count=1,
                     memory_per_cpu_mb=512, array_job_id=7, array_tasks="1-9", task_count=9)
    (out,) = packing_jobs(Snapshot(jobs=(array,)), SITE, bands={})
    assert (out.per_job.cpus, out.per_job.mem_gb, out.nodes) == (36, 18, 1) and not out.pinned


@pytest.mark.parametrize("values, want", [
    ((7000, 0, 8003), {1: 4, 2: 4, 3: 0, 4: 7}),  # rank among the distinct values, spread over 0..7
    ((2_002_500, 2500, 4_124_030), {1: 4, 2: 4, 3: 0, 4: 7}),  # only the order counts, not the scale
    ((5, 5, 5), {1: 7, 2: 7, 3: 7, 4: 7}),  # one value: every job most urgent
])
def test_bands_from_site_factor(values, want):
    a, b, c = values
    d = Decision((SetSiteFactor((1, 2), a, "x"), SetSiteFactor((3,), b, "y"), SetSiteFactor((4,), c, "z")))
    assert bands_from(d) == want
