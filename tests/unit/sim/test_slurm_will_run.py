"""Slurm's will-run start estimate (select/cons_tres ``_will_run_test``) and the replay's backfill plans with it;
backfill cycles Slurm cut short."""

from __future__ import annotations

import pytest

from slurm_plugin.sim.fidelity_replay import cut_short_cycles, simulate_record
from slurm_plugin.sim.fidelity_workload import replay_site_data
from slurm_plugin.sim.slurm_timing import SlurmTiming
from slurm_plugin.sim.slurm_will_run import guess_job_end, will_run_start
from slurm_plugin.site import Site

from .test_slurm_timing import T0, _job, _starts

NOW = 1_796_414_425  # 20:00:25 of the seed-71 replay (22.05.8)


def _fits_after(job: int):
    """fits(k): the pending job fits once the job at sorted position ``job`` has ended."""
    return lambda k: k >= job


def test_seed_71_job_33_is_planned_at_the_end_of_the_last_job_of_its_group():
    """The 22.05 log: job 33 (64 cores, any arch) fits on rvn1 once job 17 ends (20:00:55), yet slurmctld planned
    it at 20:03:25, the end of job 10 on armn[2-3]. Running jobs by end: 17 (rvn1), 4 (npun1), 18 (armn[1-3]),
    20, 29, 31 (a100n1, gh200n1), 5 (a100n1), 19, 26 (gh200n1, armn1), 10 (armn[2-3]); the candidates are
    rvn1, armn2, armn3, the x86 and DPU nodes (the others were reserved). 17 opens the group; the peek at job 4
    (20:01:11, within the barrier 20:01:00 + 30 s) keeps it open, so 18 is removed; the peek at job 20 keeps
    it open, and the skipped jobs 20-26 are never checked, so job 10 is removed too."""
    ends = [NOW + 30, NOW + 46, NOW + 60, NOW + 60, NOW + 60, NOW + 60, NOW + 106, NOW + 120, NOW + 120, NOW + 180]
    overlap = [True, False, True, False, False, False, False, False, False, True]
    assert will_run_start(ends, overlap, _fits_after(0), NOW, 5) == NOW + 180


def test_a_later_job_beyond_the_window_closes_the_group():
    """The peek sees a job ending after barrier + 30 s: the group is the first job alone, and the estimate is
    its end, the earliest fit."""
    ends = [NOW + 30, NOW + 200, NOW + 300]
    assert will_run_start(ends, [True, True, True], _fits_after(0), NOW, 5) == NOW + 30


def test_the_window_doubles_between_groups():
    """On the 30 s grid (A): the first end (A + 30) sets the barrier A + 60. Group 1 is that job alone (the next
    ends at A + 100 > A + 60 + 30); the window doubles to 60, so group 2 takes A + 100 and, since A + 110 is
    within A + 60 + 60, A + 110 too. The job fits once A + 100 ends, but its start is A + 110 (with the first
    window kept, group 2 would have stopped at A + 100)."""
    a = 1_800_000_000
    ends = [a + 30, a + 100, a + 110, a + 400]
    assert will_run_start(ends, [True] * 4, _fits_after(1), a - 10, 5) == a + 110


def test_no_fit_after_every_group_and_no_overlap_give_none():
    ends = [NOW + 30, NOW + 60]
    assert will_run_start(ends, [True, True], lambda k: False, NOW, 5) is None
    assert will_run_start(ends, [False, False], _fits_after(0), NOW, 5) is None
    assert will_run_start([], [], _fits_after(0), NOW, 5) is None


def test_a_job_past_its_end_is_guessed_to_end_after_kill_wait():
    assert will_run_start([NOW - 2], [True], _fits_after(0), NOW, 5) == NOW + 3
    assert guess_job_end(NOW - 10, NOW, 5) == NOW + 1


def test_will_run_needs_slurms_backfill_engine():
    with pytest.raises(ValueError, match="will_run"):
        SlurmTiming(will_run=True)


def test_a_later_plan_lets_a_short_job_in_before_it():
    """rvn1 (riscv, 64 cores) runs A (16 cores, ends by 60 s) and D (16 cores, ends by 240 s); X (x86, ends by
    120 s) runs elsewhere. B (48 cores, high SiteFactor) fits on rvn1 once A ends; C (16 cores, 1 min) fits now.
    Planned at the earliest fit (60 s), B's window (from 60 s) keeps C off until B has run. Slurm's estimate is
    240 s (A opens the group, the peek at X keeps it open, D is removed with it), so the cycle at 10 s
    backfills C."""
    jobs = [_job(1, 0, 0, 50, arch="riscv64", cores=16, limit_min=1),
            _job(2, 0.1, 0, 200, arch="riscv64", cores=16, limit_min=4),
            _job(3, 0.2, 0, 100, arch="x86_64", cores=1, limit_min=2),
            _job(4, 5, 50, 60, arch="riscv64", cores=48, limit_min=1, factor=5000),
            _job(5, 6, 10, 20, arch="riscv64", cores=16, limit_min=1, factor=0)]
    kw = dict(site_factor=True, bf_resolution_s=60.0, reservations=100, kill_wait_s=5.0)
    exact = _starts(jobs, SlurmTiming(**kw), bf_cycles=[10.5])[0]
    assert exact[5] >= 50 and exact[4] == 50
    slurm = _starts(jobs, SlurmTiming(**kw, will_run=True), bf_cycles=[10.5])[0]
    assert slurm[5] == 10 and slurm[4] == 50


def test_cut_short_cycles_are_the_long_ones_that_tested_fewer_jobs_than_were_pending():
    """Three cycles (at 10, 40 and 70 s): the first tested all 3 pending jobs; the second ran 2.5 s and tested
    2 of 4 (it yielded and stopped: cut short); the third was quick and reported one job fewer than pending
    (submitted within its second: no cut)."""
    jobs = [{"submit": T0 + s, "start": T0 + st} for s, st in ((0, 100), (1, 100), (2, 100), (30, 100), (69.9, 100))]
    record = {"jobs": jobs, "bf_cycles": [T0 + 10, T0 + 40, T0 + 70],
              "ctld_events": {"bf_end": [[T0 + 10.01, "completed", 3, 3], [T0 + 42.5, "completed", 2, 2],
                                         [T0 + 70.01, "completed", 4, 4]]}}
    assert cut_short_cycles(record, T0) == {40.0: 2}
    assert cut_short_cycles({"jobs": jobs, "bf_cycles": []}, T0) == {}


def test_a_cut_short_cycle_backfills_only_the_jobs_it_tested():
    """The riscv node is full (A, 64 cores); B (64 cores, top priority) waits for it; C and D (x86, 1 core)
    fit now on the x86 nodes but only a backfill cycle may start them (the main pass stops at B). A cycle that
    tested only 2 jobs (B and C) starts C and leaves D for the next cycle."""
    jobs = [_job(1, 0, 0, 200, arch="riscv64", cores=64, limit_min=4),
            _job(2, 1, 200, 210, arch="riscv64", cores=64, limit_min=1, factor=5000),
            _job(3, 2, 10, 20, arch="x86_64", cores=1, limit_min=1, factor=0),
            _job(4, 3, 40, 50, arch="x86_64", cores=1, limit_min=1, factor=0)]
    site = Site.model_validate(replay_site_data("demo", power=False))
    record = {"jobs": jobs, "power": {}, "bf_cycles": [T0 + 10.5, T0 + 40.5],
              "ctld_events": {"bf_end": [[T0 + 13.0, "completed", 2, 2], [T0 + 40.6, "completed", 1, 1]]}}
    kw = dict(site_factor=True, bf_resolution_s=60.0, reservations=100)
    full = simulate_record(site, record, SlurmTiming(**kw))
    cut = simulate_record(site, record, SlurmTiming(**kw, bf_depth=True))
    assert dict(zip(full["id"], full["start"]))[4] == 10
    assert dict(zip(cut["id"], cut["start"]))[3] == 10 and dict(zip(cut["id"], cut["start"]))[4] == 40
