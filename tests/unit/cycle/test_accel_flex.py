"""Jobs that accept several accelerator types: which may be moved, and how packing sees them."""

import pytest

from slurm_plugin.cycle.inputs import accel_choice, packing_jobs
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import GresCount, JobState, Snapshot

SITE = load_site("demo")
GPU1 = (GresCount("gpu", None, 1),)
A100 = (GresCount("gpu", "a100", 1),)


@pytest.mark.parametrize("gres,features,comment,want", [
    (GPU1, "a100|h100", "", ("a100", "h100")),                             # OR of the site's types
    (GPU1, "[a100|h100]", "", ("a100", "h100")),
    (GPU1, "a100", "hetsched:class=ai-training,flex=a100|h100", ("a100", "h100")),  # admission narrowed it
    (GPU1, "a100", "", ()),                                                # the user chose
    (GPU1, "a100|v100", "", ()),                                           # v100: not a type of this site
    (GPU1, "aarch64|h100", "", ()),                                        # not only accelerator types
    (A100, "", "hetsched:flex=a100|h100", ()),                             # typed GRES: Slurm cannot re-type it
    ((), "a100|h100", "", ()),                                             # no GRES at all
])
def test_accel_choice(gres, features, comment, want):
    assert accel_choice(JobState(1, "PENDING", features=features, comment=comment, gres=gres), SITE) == want


def test_untyped_gpu_job_with_a_type_choice_is_movable_and_typed_one_pinned():
    jobs = (JobState(7, "PENDING", partition="gpu", cpus=4, gres=GPU1, features="a100|h100",
                     comment="class=ai-training"),
            JobState(8, "PENDING", partition="gpu", cpus=4, gres=A100, comment="hetsched:flex=a100|h100"))
    flexible, typed = packing_jobs(Snapshot(jobs=jobs), SITE, bands={})
    assert not flexible.pinned and flexible.accel_types == ("a100", "h100") and flexible.per_job.accels == 1
    assert typed.pinned and typed.accel_types == ("a100",)
