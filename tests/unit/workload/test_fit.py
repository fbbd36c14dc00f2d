"""able_cores: the one-shape fast path gives what the per-shape path gives."""

from dataclasses import replace

import numpy as np

from slurm_plugin.sim.machine import homogeneous, machine_from_site
from slurm_plugin.site import load_site
from slurm_plugin.workload import load_workload
from slurm_plugin.workload.fit import able_cores


def test_unconstrained_jobs_get_every_groups_cores_on_any_machine():
    site = load_site("demo")
    jobs = load_workload("synthetic:jobs=200,seed=3", site).jobs
    free = replace(jobs, arch_mask=np.zeros_like(jobs.arch_mask), gres_name=np.full_like(jobs.gres_name, -1))
    for machine in (machine_from_site(site), homogeneous(64, 4)):
        fast = able_cores(free, machine)
        # the per-shape path: one constrained job makes the table two shapes; the unconstrained rows keep theirs
        mixed = replace(free, arch_mask=np.where(np.arange(len(free)) == 0, jobs.arch_mask.max(), 0))
        slow = able_cores(mixed, machine)
        assert fast.dtype == slow.dtype and fast.tolist()[1:] == slow.tolist()[1:]
        assert fast[0] == float(sum(g.count * g.cores for g in machine.groups))
