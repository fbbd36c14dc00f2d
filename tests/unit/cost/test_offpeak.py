"""Off-peak policies: where each kind of job may run at a given simulated time (pure logic, large.yaml scaled)."""

from __future__ import annotations

import numpy as np
import pytest

from slurm_plugin.cost.offpeak import KINDS, MultiRegionSpec, OffPeak, generate, machine
from slurm_plugin.site import load_site
from slurm_plugin.snapshot.synthetic import scaled_site

# simulated time 0 is Monday 00:00 UTC: 12:00 UTC Monday is Paris/New York working day, Tokyo night (21:00)
MON_NOON, SAT_NOON = 12 * 3600.0, (5 * 24 + 12) * 3600.0


@pytest.fixture(scope="module")
def large():
    site = scaled_site(load_site("large"), 120)
    m = machine(site)
    w, home, kind = generate(site, MultiRegionSpec(jobs=400, days=2, load=0.002))
    return site, m, w.jobs, home, kind


def _names(m, ok):
    return {g.name for g, a in zip(m.groups, ok) if a}


def _job(kind, home, k, region):
    return next(i for i in range(len(kind)) if KINDS[kind[i]] == k and home[i] == region)


def test_generated_arrivals_follow_each_regions_working_hours(large):
    site, m, jobs, home, kind = large
    eu = jobs.submit[home == 1]  # regions in site order: us, eu, ap
    paris_hour = ((eu + 3600) % 86400) / 3600
    assert np.mean((paris_hour >= 9) & (paris_hour < 18)) > 0.5


def test_follow_the_sun_adds_only_regions_at_night(large):
    site, m, jobs, home, kind = large
    j = _job(kind, home, "batch", 1)  # an EU batch job
    base = OffPeak(site, m, jobs, home, kind).allowed(j, MON_NOON)
    fts = OffPeak(site, m, jobs, home, kind, ("follow-the-sun",)).allowed(j, MON_NOON)
    assert _names(m, base) <= {"eu-x86", "eu-arm", "eu-riscv"}
    assert _names(m, fts) - _names(m, base) == {"ap-arm"}  # Tokyo at 21:00; New York at 07:00 is not night


def test_dev_shrink_on_workdays_and_lending_at_weekends(large):
    site, m, jobs, home, kind = large
    dev = _job(kind, home, "dev", 1)
    shrink = OffPeak(site, m, jobs, home, kind, ("dev-shrink",))
    assert _names(m, shrink.allowed(dev, MON_NOON)) == {"eu-x86-dev-keep"}
    assert _names(m, shrink.allowed(dev, SAT_NOON)) == {"eu-x86-dev-keep", "eu-x86-dev-flex"}
    batch = _job(kind, home, "batch", 1)
    assert "eu-x86-dev-flex" in _names(m, shrink.allowed(batch, MON_NOON))
    render = _job(kind, home, "render", 0)
    lend = OffPeak(site, m, jobs, home, kind, ("weekend-lending",))
    assert not any(g.gres for g, a in zip(m.groups, lend.allowed(render, MON_NOON)) if a)
    assert {"us-a100", "us-h100"} <= _names(m, lend.allowed(render, SAT_NOON))
    gpu = _job(kind, home, "gpu", 0)
    assert _names(m, lend.allowed(gpu, SAT_NOON)) <= {"us-a100", "us-h100"}  # accelerator jobs never move


def test_the_load_is_offered_by_enough_jobs_not_by_stretching_a_few():
    from slurm_plugin.snapshot.synthetic import scaled_site
    site = scaled_site(load_site("large"), 40)
    spec = MultiRegionSpec(days=2, load=0.5)  # jobs=0: as many as the load needs
    w, _, kind = generate(site, spec)
    cpu = sum(g.count * g.cpu.cores for g in site.node_groups if not g.gres)
    offered = float((w.jobs.run * w.jobs.cores)[kind != 3].sum()) / (cpu * 2 * 86400)
    assert offered == pytest.approx(0.5, rel=0.01)
    assert w.jobs.run.max() <= 86400 + 60 and np.median(w.jobs.run) < 3600
    with pytest.raises(ValueError, match=r"give jobs >= \d+"):
        generate(site, MultiRegionSpec(jobs=200, days=2, load=0.5))
