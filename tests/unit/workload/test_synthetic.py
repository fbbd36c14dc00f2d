"""Synthetic heterogeneous generator: seeded, classes with arch/accelerator mixes, fits the site."""

import numpy as np
import pytest

from slurm_plugin.sim.machine import machine_from_site
from slurm_plugin.site import load_site
from slurm_plugin.workload import SyntheticSpec, load_workload, unfit_jobs


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


def test_seeded_and_deterministic(demo):
    a = load_workload("synthetic:jobs=500,seed=3", demo).jobs
    b = load_workload("synthetic:jobs=500,seed=3", demo).jobs
    c = load_workload("synthetic:jobs=500,seed=4", demo).jobs
    assert np.array_equal(a.submit, b.submit) and np.array_equal(a.nodes, b.nodes)
    assert not np.array_equal(a.submit, c.submit)


def test_mixes_classes_archs_and_accelerators(demo):
    j = load_workload("synthetic:jobs=2000,seed=1", demo).jobs
    assert len(j) == 2000 and set(j.class_names) == {"ai-training", "video-render", "web", "batch"}
    assert set(np.unique(j.wclass)) == {0, 1, 2, 3}
    gpu = j.gres_name >= 0
    assert gpu.any() and (j.wclass[gpu] == 0).all()  # only ai-training asks for accelerators
    assert set(j.gres_types) <= {"a100", "h100", "ascend910b"}
    assert (np.bincount(j.arch_mask[~gpu]) > 0).sum() >= 3  # single archs and multi-arch masks
    assert not unfit_jobs(j, machine_from_site(demo))
    assert (j.run <= j.limit).all() and np.all(np.diff(j.submit) >= 0)


def test_weekends_are_quieter(demo):
    j = load_workload("synthetic:jobs=20000,seed=2,load=0.8", demo).jobs
    day = (j.submit // 86400) % 7
    weekday_rate = np.mean([np.sum(day == d) for d in range(5)])
    weekend_rate = np.mean([np.sum(day == d) for d in (5, 6)])
    assert weekend_rate < 0.7 * weekday_rate


@pytest.mark.parametrize("text,err", [("synthetic:jobs", "bad synthetic spec"), ("synthetic:foo=1", "keys")])
def test_bad_spec(text, err):
    with pytest.raises(ValueError, match=err):
        SyntheticSpec.parse(text)
