"""Off-peak policies: where each kind of job may run at a given simulated time (pure logic, large.yaml scaled)."""

from __future__ import annotations

import numpy as np
import pytest

from slurm_plugin.cost.offpeak import KINDS, MultiRegionSpec, OffPeak, generate, machine, pools
from slurm_plugin.workload.jobs import ARCH_BIT
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


@pytest.fixture(scope="module")
def week42():
    """The evaluation's setup (large.yaml at 42 nodes), 2 days at load 0.5."""
    site = scaled_site(load_site("large"), 42)
    w, home, kind = generate(site, MultiRegionSpec(days=2, load=0.5))
    return site, machine(site), w.jobs, home, kind


def _baseline_pools(m, jobs, home, kind, site):
    """Pools found from the simulator's side, independently of the generator's: for each job the groups the
    baseline router allows it that can hold it (its arch or its device type); overlapping sets joined."""
    rule = OffPeak(site, m, jobs, home, kind)
    sets: list[set] = []
    for j in range(len(jobs.run)):
        ok = rule.allowed(j, float(jobs.submit[j]))
        if jobs.gres_count[j] > 0:
            t = jobs.gres_types[jobs.gres_type[j]]
            fit = {g.name for g, a in zip(m.groups, ok) if a and any(k[1] == t for k in g.gres)}
        else:
            fit = {g.name for g, a in zip(m.groups, ok)
                   if a and not g.gres and int(jobs.arch_mask[j]) & ARCH_BIT.get(g.arch, 0)}
        assert fit, f"job row {j} ({KINDS[kind[j]]}) has no group at baseline"
        sets.append(fit)
    pools: list[set] = []
    for fit in sets:
        joined = [p for p in pools if p & fit]
        for p in joined:
            pools.remove(p)
            fit = fit | p
        pools.append(fit)
    return sets, pools


def test_every_baseline_pool_is_offered_the_load_asked(week42):
    """The bug this guards: the load was calibrated over the CPU groups only, so the 1-2 node accelerator and dev
    pools of a scaled site got 10 % of all jobs and waited a day (gpu 89,138 s mean in the week-long run)."""
    site, m, jobs, home, kind = week42
    sets, found = _baseline_pools(m, jobs, home, kind, site)
    horizon = 2 * 86400.0
    by_name = {g.name: g for g in m.groups}
    assert len(found) == len(pools(site)) == 9  # 3 regions' CPU, 5 accelerator types, the dev slice
    for pool in found:
        rows = [j for j, s in enumerate(sets) if s <= pool]
        devices = any(by_name[g].gres for g in pool)
        unit = jobs.gres_count if devices else jobs.cores
        cap = sum(by_name[g].count * (sum(v for k, v in by_name[g].gres.items() if k[0] in ("gpu", "npu"))
                                      if devices else by_name[g].cores) for g in pool)
        offered = float((jobs.run[rows] * unit[rows]).sum()) / (cap * horizon)
        assert offered == pytest.approx(0.5, rel=0.01), sorted(pool)


def test_generator_pools_match_the_baseline_router(week42):
    site, m, jobs, home, kind = week42
    _, found = _baseline_pools(m, jobs, home, kind, site)
    assert sorted(sorted(p) for p in found) == sorted(sorted(p.groups) for p in pools(site))


def test_the_load_is_offered_by_enough_jobs_not_by_stretching_a_few(week42):
    site, m, jobs, home, kind = week42
    assert jobs.run.max() <= 86400 + 60 and np.median(jobs.run) < 3600
    assert jobs.cores.max() <= 32 and jobs.gres_count.max() <= 8
    with pytest.raises(ValueError, match=r"pool .*: \d+ jobs cannot offer the load asked.*needs about \d+\): "
                                         r"give jobs >= \d+"):
        generate(site, MultiRegionSpec(jobs=200, days=2, load=0.5))


def test_a_pool_that_cannot_carry_its_kind_is_an_error():
    doc = scaled_site(load_site("large"), 42).model_dump()
    for cluster in doc["clusters"]:
        for g in cluster["node_groups"]:
            if g["name"] == "eu-x86":  # the dev partition's group, now aarch64
                g["cpu"]["arch"] = "aarch64"
    site = type(load_site("large")).model_validate(doc)
    with pytest.raises(ValueError, match=r"pool dev \(eu-x86-dev-keep, eu-x86-dev-flex: aarch64.*cannot carry dev"):
        generate(site, MultiRegionSpec(days=1, load=0.5))


def test_each_jobs_pool_is_the_one_its_baseline_groups_form(week42):
    site, m, jobs, home, kind = week42
    from slurm_plugin.cost.offpeak import pool_of, waits_by
    sets, _ = _baseline_pools(m, jobs, home, kind, site)
    groups = {p.name: set(p.groups) for p in pools(site)}
    assert all(s <= groups[name] for s, name in zip(sets, pool_of(site, jobs, home, kind)))
    got = waits_by(["a", "b", "a", "a"], np.array([10.0, np.nan, 30.0, 20.0]))
    assert got["a"]["avg_wait_s"] == 20.0 and got["b"] == {"jobs": 1, "unstarted": 1, "avg_wait_s": None,
                                                             "p95_wait_s": None}


def test_wait_table_has_a_line_per_pool_and_a_column_per_arm():
    from slurm_plugin.cost.offpeak import wait_table
    started = {"jobs": 4, "unstarted": 0, "avg_wait_s": 12.4, "p95_wait_s": 30.0}
    rows = [{"scenario": "baseline", "wait_by_pool": {"us cpu": started,
                                                      "eu gpu": {"jobs": 2, "unstarted": 2, "avg_wait_s": None,
                                                                 "p95_wait_s": None}}},
            {"scenario": "all", "wait_by_pool": {"us cpu": dict(started, unstarted=1, avg_wait_s=7.6)}}]
    lines = wait_table(rows).splitlines()
    assert lines[0] == "| pool (jobs) | baseline | all |"
    assert lines[2:] == ["| eu gpu (2) | - (+2 unstarted) | - |",
                         "| us cpu (4) | 12 / 30 | 8 / 30 (+1 unstarted) |"]


def test_cli_text_prints_the_waits_per_pool_and_kind():
    from click.testing import CliRunner
    from slurm_plugin.cli import main
    res = CliRunner().invoke(main, ["cost", "offpeak", "--site", "large", "--nodes", "42",
                                    "-w", "multiregion:days=1,load=0.05", "--arms", "baseline"])
    assert res.exit_code == 0, res.output
    pools_part = res.output.split("per baseline pool:")[1].split("per kind of job:")
    assert "| us-east cpu (" in pools_part[0] and "| dev (" in pools_part[0]
    assert "| batch (" in pools_part[1] and "| render (" in pools_part[1]
