"""The optional Slurm timing of fidelity replays (sim/slurm_timing.py): each switch changes a small replay's
schedule the way slurmctld does, and the default (OFF) changes nothing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from slurm_plugin.site import Site
from slurm_plugin.rank.heuristics import Multifactor, QueueView
from slurm_plugin.sim.fidelity_replay import (_replay_hosts, power_at_start, power_scan_strict, priority_calc_period,
                                             real_power, recorded_boot_s, recorded_idle_at_start, replay_table,
                                             replay_timing, simulate_record, site_factor_at_start)
from slurm_plugin.sim.fidelity_workload import PARTITION, hetero_workload, replay_site_data
from slurm_plugin.sim.hooks import ranking
from slurm_plugin.sim.machine import machine_from_site
from slurm_plugin.sim.slurm_select import select_nodes
from slurm_plugin.sim.slurm_timing import (OFF, CalcPeriodPriority, SlurmSuspend, SlurmTiming, batch_passes,
                                           power_scan_due, priority_calc_time, shutdown_done, suspend_due)
from slurm_plugin.sim.views import PowerView

T0 = 1_800_000_000.0


def _job(jid, submit, start, end, gres=None, arch=None, cores=8, limit_min=1, state="COMPLETED", factor=None):
    spec = dict(offset_s=submit, nodes=1, cores=cores, run_s=int(end - start), limit_min=limit_min, arch=arch,
                gres=gres, wclass=None)
    return {"id": jid, "submit": T0 + submit, "submit_wall": T0 + submit + 0.2, "start": T0 + start,
            "end": T0 + end, "state": state, "nodelist": "", "features": arch or "(null)", "gres": "",
            "spec": spec, "site_factor": [] if factor is None else [[T0 + submit + 0.5, factor]]}


def _starts(jobs, timing, power=False, bf_cycles=()):
    site = Site.model_validate(replay_site_data("demo", power=power))
    sim = simulate_record(site, {"jobs": jobs, "power": {}, "bf_cycles": [T0 + c for c in bf_cycles]}, timing)
    return dict(zip(sim["id"], sim["start"])), sim


H100 = "gpu:h100:4"  # the demo site's only h100 node, all of it: the second such job waits for the first


def test_release_latency_delays_the_next_start():
    jobs = [_job(1, 0, 0, 10, H100), _job(2, 1, 10, 20, H100)]
    assert _starts(jobs, OFF)[0][2] == 10
    assert _starts(jobs, SlurmTiming(release_s=2.0))[0][2] == 12


def test_submit_latency_delays_a_start_on_an_idle_cluster():
    jobs = [_job(1, 0, 1, 10, H100)]
    assert _starts(jobs, OFF)[0][1] == 0
    assert _starts(jobs, SlurmTiming(submit_s=1.5))[0][1] == 1  # starts at 1.7 s, recorded as second 1


def test_batch_passes_follow_slurmctlds_background_loop():
    """Seed 21's first submits (9.5-13.4 s after T0, a whole second): slurmctld scheduled them at 10, 13 and
    16 s (batch_sched_delay 3 s after each pass); a full pass (every 60 s from slurmctld's start) on the way
    takes the waiting jobs early and restarts the delay."""
    subs = np.array([9.5, 10.3, 10.8, 11.8, 12.5, 13.4])
    assert batch_passes(subs, T0, T0 - 100).tolist() == [10, 13, 16]
    assert batch_passes(subs, T0, T0 - 48).tolist() == [10, 12, 15]  # full passes at 12 s, 72 s, ...
    assert batch_passes(subs[::-1], T0, T0 - 100).tolist() == [10, 13, 16]  # order of the input
    assert batch_passes(np.array([5.0]), T0, T0 - 100).tolist() == [5]  # a submit on a wake is seen by it
    assert batch_passes(np.array([]), T0, T0).tolist() == []


def test_a_submit_waits_for_the_batch_pass_but_other_events_see_it():
    """On an idle cluster job 2 (submitted 1.2 s after job 1's 0.2 s) waits for the pass 3 s after job 1's;
    job 4 (submitted at 2.2 s) is scheduled at once when job 3 ends at 3 s (+ 0 s release): an end runs the
    scheduler, which sees every job submitted so far."""
    batch = SlurmTiming(bf_resolution_s=60.0, batch_sched_delay_s=3.0, sched_start=T0 - 100)
    jobs = [_job(1, 0, 1, 30, H100), _job(2, 1, 4, 30, arch="x86_64", cores=4)]
    cycles = [100.0]  # no backfill cycle in the way (one would see and start every job that fits)
    assert _starts(jobs, SlurmTiming(bf_resolution_s=60.0), bf_cycles=cycles)[0] == {1: 0, 2: 1}
    assert _starts(jobs, batch, bf_cycles=cycles)[0] == {1: 1, 2: 4}
    jobs = [_job(3, 0, 1, 3, arch="riscv64", cores=64), _job(4, 2, 3, 9, arch="riscv64", cores=64)]
    assert _starts(jobs, batch, bf_cycles=cycles)[0] == {3: 1, 4: 3}


def test_bf_sees_submit_lets_a_backfill_cycle_see_a_job_at_once():
    """Seed 63's job 633, small: job 2 (submitted at 10.2 s) fits on the idle riscv node and a backfill cycle
    runs at 10.5 s. With ``submit_s`` alone the job reaches the queue at 11.7 s and starts at its own main
    pass; with ``bf_sees_submit`` the cycle tests it and starts it (as slurmctld's did). Without a cycle in the
    way the main pass still waits ``submit_s``; a job's end within it (job 3's, 10.9 s) does not see it."""
    jobs = [_job(1, 0, 0, 30, H100), _job(2, 10, 10, 20, arch="riscv64", cores=64)]
    late = SlurmTiming(submit_s=1.5, bf_resolution_s=60.0)
    seen = dataclasses.replace(late, bf_sees_submit=True)
    assert _starts(jobs, late, bf_cycles=[10.5])[0][2] == 11
    assert _starts(jobs, seen, bf_cycles=[10.5])[0][2] == 10
    assert _starts(jobs, seen, bf_cycles=[40.0])[0][2] == 11
    jobs.append(_job(3, 9, 9, 10.9, arch="x86_64", cores=1))
    assert _starts(jobs, seen, bf_cycles=[40.0])[0][2] == 11
    with pytest.raises(ValueError, match="bf_sees_submit needs bf_resolution_s"):
        SlurmTiming(bf_sees_submit=True)


def test_overrun_holds_the_nodes_until_the_recorded_kill():
    jobs = [_job(1, 0, 0, 75, H100, state="TIMEOUT"), _job(2, 1, 75, 80, H100)]
    assert _starts(jobs, OFF)[0][2] == 60  # killed exactly at its one-minute limit
    assert _starts(jobs, SlurmTiming(overrun=True))[0][2] == 75


def test_site_factor_reorders_the_queue():
    jobs = [_job(1, 0, 0, 10, H100), _job(2, 1, 20, 30, H100, factor=0), _job(3, 2, 10, 20, H100, factor=5000)]
    off = _starts(jobs, OFF)[0]
    assert off[2] < off[3]
    on = _starts(jobs, SlurmTiming(site_factor=True))[0]
    assert on[3] == 10 and on[2] == 20


def test_boot_and_suspend_timing():
    """A job at 40 s finds its node powered down (SuspendTime 20 s after the cluster went idle): it starts
    after the recorded boot (3 s), not the site file's boot time (120 s for the RISC-V node)."""
    jobs = [_job(1, 0, 0, 1, arch="x86_64", cores=1), _job(2, 40, 44, 50, arch="riscv64", cores=64)]
    base = SlurmTiming(suspend_time_s=20.0, shutdown_s=10.0)
    starts, sim = _starts(jobs, base, power=True)
    assert starts[2] >= 160 and sim["power_ups"] == 1
    starts, sim = _starts(jobs, SlurmTiming(suspend_time_s=20.0, shutdown_s=10.0, boot_s=3.0), power=True)
    assert starts[2] == 43 and sim["power_ups"] == 1


def test_booted_nodes_take_their_jobs_at_the_time_limit_check():
    """The riscv node is off at 40 s; the job that boots it (3 s) stays CONFIGURING until slurmctld's next
    time-limit check (every 30 s, one at 10 s: so at 70 s), as 22.05's log shows; without the switch when the
    boot ends (submitted at 40.2 s: 43.2 s, recorded as 43)."""
    jobs = [_job(1, 0, 0, 1, arch="x86_64", cores=1), _job(2, 40, 70, 76, arch="riscv64", cores=64)]
    kw = dict(suspend_time_s=20.0, shutdown_s=10.0, boot_s=3.0)
    assert _starts(jobs, SlurmTiming(**kw), power=True)[0][2] == 43
    assert _starts(jobs, SlurmTiming(**kw, config_tick_s=30.0, config_epoch=T0 + 10.0), power=True)[0][2] == 70
    assert _starts(jobs, SlurmTiming(**kw, config_tick_s=30.0, config_epoch=T0 + 44.0), power=True)[0][2] == 44


def test_backfill_windows_are_whole_minutes_before_the_planned_start():
    """A (32 cores) holds the riscv node until its limit (150 s); B (all 64 cores, higher SiteFactor) is
    planned there at 150 s; C (16 cores, 1 min) is tested by the backfill cycle at 70 s. Exact plans let C in
    (70 + 60 <= 150); Slurm reserves B's node from 150 s rounded down to the minute (120 s), so C (to 130 s)
    would touch it: C waits until B has run."""
    jobs = [_job(9, 0, 0, 1, arch="x86_64", cores=1),  # times count from the first submit
            _job(1, 30, 30, 100, arch="riscv64", cores=32, limit_min=2),
            _job(2, 31, 100, 110, arch="riscv64", cores=64, limit_min=2, factor=5000),
            _job(3, 32, 110, 120, arch="riscv64", cores=16, limit_min=1, factor=0)]
    exact = _starts(jobs, SlurmTiming(site_factor=True), bf_cycles=[70.5])[0]
    assert exact[3] == 70 and exact[2] == 100
    slurm = _starts(jobs, SlurmTiming(site_factor=True, bf_resolution_s=60.0), bf_cycles=[70.5])[0]
    assert slurm[2] == 100 and slurm[3] == 110
    assert _starts(jobs, SlurmTiming(site_factor=True, bf_resolution_s=1.0), bf_cycles=[70.5])[0][3] == 70


def test_suspend_checked_every_second():
    """The node of a job that ended at 3 s powers down 20 s later (Slurm's power thread, every second), and is
    off by 33 s: a job at 34 s boots it at once (37 s); the engine's IdleSuspend checks only every 5 s."""
    jobs = [_job(1, 0, 0, 3, arch="riscv64", cores=64), _job(2, 34, 37, 40, arch="riscv64", cores=64)]
    kw = dict(suspend_time_s=20.0, shutdown_s=10.0, boot_s=3.0, release_s=0.0)
    assert _starts(jobs, SlurmTiming(**kw, suspend_tick_s=1.0), power=True)[0][2] == 37
    assert _starts(jobs, SlurmTiming(**kw, suspend_tick_s=5.0), power=True)[0][2] == 38


def test_a_reservation_per_pending_job_with_power_saving():
    """B (h100:4) waits for A, C (a100:4) for D; E (a100:2, 4 min) fits now on C's node. EASY protects only
    the head (B), so E starts and C waits for E; with a reservation per job (Slurm) E may not delay C."""
    jobs = [_job(1, 0, 0, 100, "gpu:h100:4", limit_min=2, factor=5000),
            _job(2, 0, 0, 50, "gpu:a100:2", limit_min=1, factor=5000),
            _job(3, 1, 120, 130, H100, factor=3000), _job(4, 2, 60, 70, "gpu:a100:4", factor=2000),
            _job(5, 3, 70, 270, "gpu:a100:2", limit_min=4, factor=0)]
    kw = dict(site_factor=True, suspend_time_s=1000.0, shutdown_s=10.0, boot_s=3.0)
    easy = _starts(jobs, SlurmTiming(**kw), power=True)[0]
    assert easy[5] < easy[4]
    slurm = _starts(jobs, SlurmTiming(**kw, reservations=100), power=True)[0]
    assert slurm[4] <= 60 < slurm[5]


def test_nodes_idle_before_the_first_submit_power_down_sooner():
    """The replay cluster came up before the first submit: its nodes had been idle 14 s then, so the riscv node
    begins powering down at 6 s (SuspendTime 20 s) and is off at 16 s; the job submitted at 12 s boots it once
    it is off (3 s: 19 s), one power-up. Counted from the first submit the node is still on at 12 s."""
    jobs = [_job(1, 0, 0, 1, arch="x86_64", cores=1), _job(2, 12, 19, 25, arch="riscv64", cores=64)]
    kw = dict(suspend_time_s=20.0, shutdown_s=10.0, boot_s=3.0)
    starts, sim = _starts(jobs, SlurmTiming(**kw), power=True)
    assert starts[2] == 12 and sim["power_ups"] == 0
    starts, sim = _starts(jobs, SlurmTiming(**kw, idle_at_start_s=14.0), power=True)
    assert starts[2] == 19 and sim["power_ups"] == 1


def test_recorded_idle_at_start_reads_the_first_power_downs():
    """Nodes no job had used began powering down 6 and 8 s after the first submit: idle 13 s (SuspendTime 20 s
    less the median 7 s) at the first submit; a node used before its first power-down does not count."""
    jobs = [dict(_job(1, 0, 0, 10, arch="x86_64", cores=1), nodelist="x86n1")]
    power = {"x86n1": [(T0, "on"), (T0 + 30, "shutting")], "rvn1": [(T0, "on"), (T0 + 6, "shutting")],
             "armn1": [(T0, "on"), (T0 + 8, "shutting"), (T0 + 18, "off")], "armn2": [(T0, "on")]}
    record = {"jobs": jobs, "power": power}
    assert recorded_idle_at_start(record, 20.0) == pytest.approx(13.0)
    assert replay_timing(record, replay_site_data("demo")).idle_at_start_s == pytest.approx(13.0)
    assert recorded_idle_at_start({"jobs": jobs, "power": {"x86n1": power["x86n1"]}}, 20.0) == 0.0
    assert replay_timing(record, replay_site_data("demo", power=False)).idle_at_start_s == 0.0


def test_off_is_the_default_and_validated():
    assert SlurmTiming() == OFF
    with pytest.raises(ValueError, match="release_s"):
        SlurmTiming(release_s=-1.0)
    with pytest.raises(ValueError, match="suspend_tick_s"):
        SlurmTiming(suspend_tick_s=0.0)
    for name in ("config_tick_s", "bf_resolution_s"):
        with pytest.raises(ValueError, match=name):
            SlurmTiming(**{name: 0.0})
    with pytest.raises(ValueError, match="idle_at_start_s"):
        SlurmTiming(idle_at_start_s=-1.0)
    with pytest.raises(ValueError, match="batch_sched_delay_s"):
        SlurmTiming(batch_sched_delay_s=float("nan"))


def test_real_power_counts_power_ups_and_energy():
    site = Site.model_validate(replay_site_data("demo"))
    record = {"jobs": [{"start": T0 + 0, "end": T0 + 10, "nodelist": "x86n1", "state": "COMPLETED",
                        "spec": {"cores": 16}}],
              "power": {"x86n1": [(T0, "on"), (T0 + 20, "shutting"), (T0 + 30, "off"), (T0 + 40, "booting"),
                                  (T0 + 42, "on")]}}
    ups, joules = real_power(record, site, T0, T0 + 50)
    g = site.group("cpu-x86").power
    assert ups == 1
    assert joules == pytest.approx(g.busy_w * 10 + g.idle_w * 10 + g.idle_w * 10 + g.off_w * 10 + g.idle_w * 2
                                   + g.idle_w * 8)
    assert recorded_boot_s(record) == pytest.approx(2.0)


def test_replay_timing_reads_the_site_settings():
    data = replay_site_data("demo")
    t = replay_timing({"power": {}}, data)
    assert (t.suspend_time_s, t.shutdown_s, t.boot_s) == (20.0, 10.0, None)
    assert (t.batch_sched_delay_s, t.submit_s, t.slurm_select) == (None, 1.5, True)
    # 500 node_space records (bf_node_space_size = bf_max_job_test), at most two per reservation; KillWait default
    assert (t.reservations, t.kill_wait_s, t.will_run, t.bf_depth) == (250, 30.0, False, False)
    assert replay_timing({"power": {}, "slurm_conf": {"KillWait": "5 sec"}}, data).kill_wait_s == 5.0
    record = {"power": {}, "slurmctld_start": T0, "slurm_conf": {"SchedulerParameters": "bf_continue,batch_sched_delay=7"}}
    t = replay_timing(record, data, batch_passes=True)
    assert (t.batch_sched_delay_s, t.submit_s, t.sched_start) == (7.0, 0.0, T0)
    assert replay_timing({"power": {}, "slurmctld_start": T0}, data, batch_passes=True).batch_sched_delay_s == 3.0
    assert replay_timing({"power": {}}, replay_site_data("demo", power=False)).suspend_time_s is None


def test_workload_is_deterministic_and_heterogeneous():
    a, b = hetero_workload(200, 3), hetero_workload(200, 3)
    assert a == b
    assert {j.gres.split(":")[0] for j in a if j.gres} == {"gpu", "npu"}
    assert any(j.gres and j.gres.count(":") == 1 for j in a)  # untyped
    assert any(j.nodes > 1 for j in a) and any(j.arch for j in a)
    assert any(j.run_s > j.limit_min * 60 for j in a)  # killed at the limit
    assert all(j.limit_min >= 1 for j in a)
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        hetero_workload(0, 1)


def test_no_plan_on_a_node_powering_down():
    """armn2 and armn3 power down from 6 s (idle 14 s at the first submit) and are off at 16 s; A (16 cores,
    2 min) runs on armn1. B (64 cores, higher SiteFactor) comes at 8 s and cannot start. The engine plans B on
    armn2 once it is off and booted, so the backfill cycle at 10.5 s starts C (32 cores, 2 min) on armn1;
    slurmctld has no plan on a node powering down, so B is planned on armn1 at A's limit and C (which would
    run into it) waits until armn2 is off: then B takes armn2 and C armn1 (seen in the seed-21 record)."""
    jobs = [_job(1, 0, 0, 100, arch="aarch64", cores=16, limit_min=2),
            _job(2, 8, 19, 30, arch="aarch64", cores=64, limit_min=1, factor=5000),
            _job(3, 9, 16, 30, arch="aarch64", cores=32, limit_min=2, factor=0)]
    kw = dict(site_factor=True, suspend_time_s=20.0, shutdown_s=10.0, boot_s=3.0, idle_at_start_s=14.0,
              reservations=100, bf_resolution_s=60.0)
    engine = _starts(jobs, SlurmTiming(**kw), power=True, bf_cycles=[10.5])[0]
    assert engine[3] == 10
    slurm = _starts(jobs, SlurmTiming(**kw, slurm_select=True), power=True, bf_cycles=[10.5])[0]
    assert slurm[3] == 16 and slurm[2] == 19


def test_powered_nodes_before_powered_down_ones():
    """Slurm's node choice with power saving (sim/slurm_select.py): nodes that are on or booting by Weight,
    then the powered-down ones as one tier whatever their Weight, best-fitting run of consecutive nodes first,
    and for the last node the one with the fewest free CPUs."""
    free = np.array([16, 16, 64, 64, 64, 64, 32, 72, 48, 16])
    weight = np.array([3, 3, 2, 2, 2, 1, 6, 7, 5, 4])
    down = np.array([True, True, False, True, True, True, False, False, False, True])
    # a 32-core arm job: the booting GPU node (Weight 7) before the powered-down arm nodes (Weight 2)
    assert select_nodes(np.array([3, 4, 7]), 1, free, weight, down).tolist() == [7]
    # on nodes by Weight: armn1 (2) before npun1 (5)
    assert select_nodes(np.array([2, 8, 7]), 1, free, weight, down).tolist() == [2]
    # two x86 nodes: the on A100 node, then the powered-down DPU node (a run of one, the tightest fit), not
    # the powered-down x86 nodes of lower Weight
    assert select_nodes(np.array([0, 1, 6, 9]), 2, free, weight, down).tolist() == [6, 9]
    # powered-down nodes only: their Weight does not count (rvn1, Weight 1, is not first); a run of consecutive
    # nodes is used from its start
    assert select_nodes(np.array([3, 4, 5]), 2, free, weight, down).tolist() == [3, 4]
    # the last node: fewest free CPUs that fit (armn3 with 20 free before armn2 with 64)
    free2 = free.copy()
    free2[4] = 20
    assert select_nodes(np.array([3, 4]), 1, free2, weight, down).tolist() == [4]


def _cycle_up(t, *nodes, ok=True):
    return {"kind": "power", "action": "POWER_UP", "nodes": list(nodes), "ok": ok, "t": T0 + t,
            "cause": "WARM_POOL"}


def test_the_suite_cycles_recorded_power_ups_boot_off_nodes():
    """The container replays run the suite's cycle, whose warm pool powers nodes up (24.11 trial: armn3 three
    times). rvn1 idles from the start and is off by 30 s (SuspendTime 20 s + 10 s); the cycle powered it up at
    40 s, so the riscv job submitted at 45 s starts at once instead of booting it (3 s: 48 s). A power-up of a
    node that is on (10 s), or one that failed, changes nothing; with the switch off the journal is ignored."""
    jobs = [_job(1, 0, 0, 1, arch="x86_64", cores=1), _job(2, 45, 45, 50, arch="riscv64", cores=64)]
    site = Site.model_validate(replay_site_data("demo", power=True))
    kw = dict(suspend_time_s=20.0, shutdown_s=10.0, boot_s=3.0, release_s=0.0, bf_resolution_s=60.0,
              slurm_select=True)

    def run(journal, **extra):
        record = {"jobs": jobs, "power": {}, "bf_cycles": [], "cycle_journal": journal}
        sim = simulate_record(site, record, SlurmTiming(**kw, **extra))
        return dict(zip(sim["id"], sim["start"]))[2], sim["power_ups"]

    assert run([]) == (48, 1)
    assert run([_cycle_up(40, "rvn1")], cycle_power=True) == (45, 1)
    assert run([_cycle_up(40, "rvn1")]) == (48, 1)  # switched off
    assert run([_cycle_up(10, "rvn1"), _cycle_up(40, "rvn1", ok=False)], cycle_power=True) == (48, 1)
    assert run([_cycle_up(40, "nosuchnode")], cycle_power=True) == (48, 1)


def test_replay_timing_replays_the_cycle_only_where_the_record_has_its_journal():
    site = replay_site_data("demo")
    record = {"jobs": [_job(1, 0, 0, 10, arch="x86_64", cores=1)], "power": {}}
    assert not replay_timing(record, site).cycle_power
    assert replay_timing({**record, "cycle_journal": [_cycle_up(5, "rvn1")]}, site).cycle_power


def test_plan_select_plans_on_the_lowest_weight_nodes():
    """slurmctld's backfill plans a blocked job where its will-run test puts it, by Weight (the 22.05 logs'
    plans: 470 of 607 planned node sets on seed 11 and 301 of 339 on seed 21 are the lowest-Weight nodes free
    by the planned start, 284 and 168 the busiest ones the engine takes). Arm jobs fill armn1-3 (limits 1, 2
    and 3 min) and gh200n1 (limit 2 min), a 48-core one the NPU node; H (2 x 64 arm cores, high SiteFactor)
    waits. At the 70 s cycle armn1 is free, armn2 and gh200n1 are due at 120 s: the engine plans H there
    (busiest first) and lets L (32 arm cores) start on armn1 at once; planned by Weight H holds armn1 and
    armn2, so L waits until the jobs end at 100 s."""
    def arm(jid, submit, end, cores, limit_min, factor=0):
        return _job(jid, submit, submit, end, arch="aarch64", cores=cores, limit_min=limit_min, factor=factor)
    jobs = [arm(1, 0, 50, 64, 1), arm(2, 0, 100, 64, 2), arm(3, 0, 170, 64, 3), arm(4, 0, 100, 64, 2),
            arm(5, 0, 100, 48, 2), arm(6, 10, 110, 64, 2, factor=5000), arm(7, 60, 65, 32, 1)]
    jobs[5]["spec"]["nodes"] = 2
    kw = dict(site_factor=True, bf_resolution_s=60.0, reservations=100, slurm_select=True)
    engine = _starts(jobs, SlurmTiming(**kw), bf_cycles=[70.5])[0]
    by_weight = _starts(jobs, SlurmTiming(**kw, plan_select=True), bf_cycles=[70.5])[0]
    assert (engine[7], engine[6]) == (70, 100)
    assert (by_weight[7], by_weight[6]) == (100, 100)


def test_power_scan_due_follows_slurmctlds_power_thread():
    """power_save.c _power_save_thread: a scan when a node changed since the last scan, else every
    power_save_interval; 22.05.8 compares with >=, 24.11.5 with >."""
    assert power_scan_due(100, -np.inf, -np.inf)  # the first wake scans
    assert power_scan_due(101, 100, 100)  # a change in the second of the last scan counts on 22.05
    assert not power_scan_due(101, 100, 100, strict=True)  # ... not on 24.11
    assert power_scan_due(101, 100, 101, strict=True)
    assert not power_scan_due(109, 100, 99)  # nothing changed: wait for the interval
    assert power_scan_due(110, 100, 99) and not power_scan_due(110, 100, 99, strict=True)
    assert power_scan_due(111, 100, 99, strict=True)
    assert not power_scan_due(103, 100, 101, min_interval_s=5.0)  # power_save_min_interval holds it off
    assert power_scan_due(105, 100, 101, min_interval_s=5.0)
    assert power_scan_due(105, 100, 99, interval_s=5.0)


def test_suspend_and_shutdown_on_whole_seconds():
    """_do_power_work: suspend once last_busy < now - SuspendTime, off once the request + SuspendTimeout < now,
    on slurmctld's whole seconds (time_t)."""
    assert suspend_due(np.array([81.5, 80.9, 81.0]), 101, 20.0).tolist() == [False, True, False]
    assert suspend_due(np.array([81.5]), 102, 20.0).tolist() == [True]
    assert shutdown_done(np.array([90.5, 89.9]), 100, 10.0).tolist() == [False, True]
    assert shutdown_done(np.array([90.5]), 101, np.array([10.0])).tolist() == [True]


def test_slurm_suspend_counts_last_busy_from_the_jobs_end():
    """With an epoch the suspend test is slurmctld's (whole seconds), last_busy taken ``busy_lag_s`` before
    the engine freed the node (the replay's release latency: slurmctld sets last_busy at the job's end)."""
    view = PowerView(now=21.5, state=np.zeros(3, dtype=np.int8), idle_for=np.array([20.5, 21.5, -1.0]), pending=0)
    assert SlurmSuspend(suspend_time_s=20.0).decide(view)[0].tolist() == [0, 1]
    assert SlurmSuspend(suspend_time_s=20.0, epoch=T0).decide(view)[0].tolist() == [1]  # 1.0 < 21 - 20 is false
    assert SlurmSuspend(suspend_time_s=20.0, epoch=T0, busy_lag_s=1.0).decide(view)[0].tolist() == [0, 1]


def test_power_scans_delay_suspend_and_power_down_when_the_cluster_is_quiet():
    """The riscv node's job ends at 3 s; nothing else happens until a job for it comes at 35 s. Checked every
    second, the node powers down at 23 s, is off at 33 s and boots for the new job at once (starts at 38 s).
    slurmctld's power thread scans at 3 and 4 s (the job's end), then every 10 s with no node change: 14, 24
    (20 s idle: powering down), 34 (SuspendTimeout not past), 44 (off): the job boots it then and starts at
    47 s (22.05.8). 24.11.5's strict tests scan at 0, 3, 14, 25, 36: it starts at 39 s."""
    jobs = [_job(1, 0, 0, 3, arch="riscv64", cores=64), _job(2, 35, 38, 41, arch="riscv64", cores=64)]
    kw = dict(suspend_time_s=20.0, shutdown_s=10.0, boot_s=3.0, release_s=0.0, bf_resolution_s=60.0,
              slurm_select=True, reservations=100)
    assert _starts(jobs, SlurmTiming(**kw), power=True)[0][2] == 38
    assert _starts(jobs, SlurmTiming(**kw, power_save_interval_s=10.0), power=True)[0][2] == 47
    assert _starts(jobs, SlurmTiming(**kw, power_save_interval_s=10.0, power_scan_strict=True), power=True)[0][2] == 39
    assert _starts(jobs, SlurmTiming(**kw, power_save_interval_s=1.0), power=True)[0][2] == 38


def test_replay_timing_power_scan_switch():
    data = replay_site_data("demo")
    assert replay_timing({"power": {}}, data).power_save_interval_s == 10.0  # on by default
    assert replay_timing({"power": {}}, data, power_scan=False).power_save_interval_s is None
    t = replay_timing({"power": {}, "slurm_version": "24.11.5"}, data, power_scan=True)
    assert (t.power_save_interval_s, t.power_scan_strict) == (10.0, True)
    record = {"power": {}, "slurm_version": "22.05.8", "slurm_conf": {"SlurmctldParameters": "power_save_interval=4"}}
    t = replay_timing(record, data, power_scan=True)
    assert (t.power_save_interval_s, t.power_scan_strict) == (4.0, False)
    assert replay_timing({"power": {}}, replay_site_data("demo", power=False), power_scan=True).power_save_interval_s is None
    assert replay_timing({"power": {}}, data).power_start  # on by default
    assert not replay_timing({"power": {}}, data, power_start=False).power_start
    assert not replay_timing({"power": {}}, replay_site_data("demo", power=False)).power_start
    assert [power_scan_strict(v) for v in ("22.05.8", "23.02.1", "24.11.5", None)] == [False, True, True, False]
    with pytest.raises(ValueError, match="power_save_interval_s"):
        SlurmTiming(power_save_interval_s=0.0)


def test_power_at_start_reads_the_nodes_recorded_state_at_the_first_submit():
    site = Site.model_validate(replay_site_data("demo", power=True))
    hosts = _replay_hosts(site)
    power = {"rvn1": [[T0 - 30, "on"], [T0 - 5, "shutting"], [T0 + 6, "off"]],
             "x86n1": [[T0 - 30, "shutting"], [T0 - 15, "off"]],
             "armn1": [[T0 - 30, "on"]],
             "armn2": [[T0 + 2, "shutting"]]}  # first seen after the first submit: on
    off, shutting, since = power_at_start({"power": power}, site, T0)
    assert off.tolist() == [hosts.index("x86n1")]
    assert shutting.tolist() == [hosts.index("rvn1")] and since.tolist() == [-5.0]


def test_power_start_begins_with_the_recorded_power_states():
    """The riscv node was powering down 5 s before the first submit (job 1 on an x86 node at 0 s) and a job for
    it comes at 1 s. Counted from on (idle 20 s at the first submit), the replay powers it down at its first
    check (0.2 s) and boots it at 10.2 s: the job starts at 13 s; with the recorded state it is off by 5 s
    (SuspendTimeout 10 s) and the job starts at 8 s."""
    jobs = [_job(1, 0, 0, 30, arch="x86_64", cores=1), _job(2, 1, 8, 20, arch="riscv64", cores=64)]
    site = Site.model_validate(replay_site_data("demo", power=True))
    record = {"jobs": jobs, "bf_cycles": [], "power": {"rvn1": [[T0 - 30, "on"], [T0 - 5, "shutting"]]}}
    kw = dict(suspend_time_s=20.0, shutdown_s=10.0, boot_s=3.0, release_s=0.0, idle_at_start_s=20.0,
              bf_resolution_s=60.0, slurm_select=True, reservations=100)
    starts = lambda t: dict(zip(*(simulate_record(site, record, t)[k] for k in ("id", "start"))))  # noqa: E731
    assert starts(SlurmTiming(**kw))[2] == 13
    assert starts(SlurmTiming(**kw, power_start=True))[2] == 8


# --- PriorityCalcPeriod: a pending job's age factor changes at slurmctld's priority recalculations -------------

def test_priority_calc_time_is_the_last_wake_at_or_before_now():
    assert priority_calc_time(0.0, 0.0, 300.0) == 0.0
    assert priority_calc_time(299.9, 0.0, 300.0) == 0.0
    assert priority_calc_time(300.0, 0.0, 300.0) == 300.0
    assert priority_calc_time(700.0, 40.0, 300.0) == 640.0
    assert priority_calc_time(30.0, 40.0, 300.0) == -260.0  # before the first wake after 0: the one before it


def _view(submit, now, procs=(8,), nodes=(1,)):
    n = len(submit)
    return QueueView(submit=np.asarray(submit, dtype=float), limit=np.full(n, 60.0),
                     procs=np.asarray(procs, dtype=float), qos=np.zeros(n), now=now,
                     nodes=np.asarray(nodes, dtype=float))


def test_calc_period_priority_counts_the_age_at_the_last_wake_only():
    mf = Multifactor(weight_age=1000.0, weight_size=100.0, max_age_s=7 * 86400.0, total_procs=456.0,
                     total_nodes=10.0)
    calc = CalcPeriodPriority(mf, period_s=300.0, phase_s=0.0)
    # an 8-core 1-node job: 5.88 points of job size, plus 1000 / 604,800 s of age a second. Continuously it
    # has 7 at 700 s; with Slurm's wakes (0, 300, 600, 900 s) it has the 6 of the 600 s wake until 900 s
    assert mf(_view([0.0], 0.0))[0] == -5 and mf(_view([0.0], 700.0))[0] == -7
    assert calc(_view([0.0], 700.0))[0] == mf(_view([0.0], 600.0))[0] == -6
    assert calc(_view([0.0], 899.0))[0] == -6 and calc(_view([0.0], 900.0))[0] == mf(_view([0.0], 900.0))[0] == -7
    # a job submitted since the last wake keeps its priority at submit (age 0), not a negative age
    assert calc(_view([650.0], 700.0))[0] == mf(_view([650.0], 650.0))[0] == -5
    # (a 1-core job, 5.11 points: 299 s of negative age would cost it one)
    assert calc(_view([899.0], 899.0, procs=(1,)))[0] == mf(_view([899.0], 899.0, procs=(1,)))[0] == -5


def _prio_jobs(cores_b):
    # the h100 node (all 4 GPUs) is held by job 9 until 700 s; job 1 (8 cores: 5.88 points of job size,
    # submitted at 0.7 s) and job 2 (16 cores: 6.75 points, submitted at 100.2 s) both want it then. At 700 s
    # their ages make 7.03 and 7.74, a tie at 7 that job 1 wins by its submit time; but slurmctld's priority
    # thread last set the ages at 600 s (PriorityCalcPeriod 300 s from slurmctld's start at 0): 6.87 and 7.58,
    # so job 2 first
    return [_job(9, 0, 0, 700, H100, limit_min=20), _job(1, 0.5, 701, 711, H100, limit_min=1),
            _job(2, 100, 711, 721, H100, limit_min=1, cores=cores_b)]


def test_priority_calc_period_orders_jobs_by_the_age_slurmctld_last_computed():
    site = Site.model_validate(replay_site_data("demo", power=False))
    total = float(sum(g.count * g.cores for g in machine_from_site(site, PARTITION).groups))
    mf = ranking("multifactor", site, total).scorer
    # the premise (the comment of _prio_jobs)
    view = _view([0.7, 100.2], 700.0, procs=(8, 16), nodes=(1, 1))
    assert mf(view)[0] == mf(view)[1] == -7
    assert mf(dataclasses.replace(view, now=600.0))[0] == mf(dataclasses.replace(view, now=600.0))[1] + 1
    jobs = _prio_jobs(16)
    cont, _ = _starts(jobs, OFF)
    assert cont[1] < cont[2]  # the engine's continuous age: job 1 wins the tie at 700 s by its earlier submit
    calc, _ = _starts(jobs, SlurmTiming(priority_calc_period_s=300.0, priority_epoch=T0))
    assert calc[2] < calc[1]
    # the wakes' phase counts: a wake at 690 s (job 1's 7th point came at 679.9 s) makes the tie again
    for period, epoch in ((10.0, T0), (300.0, T0 + 90.0)):
        late, _ = _starts(jobs, SlurmTiming(priority_calc_period_s=period, priority_epoch=epoch))
        assert late[1] < late[2], (period, epoch)
    # a wake at 660 s is still before it
    early, _ = _starts(jobs, SlurmTiming(priority_calc_period_s=60.0, priority_epoch=T0))
    assert early[2] < early[1]


def test_priority_calc_period_of_a_record():
    assert priority_calc_period({"slurm_conf": {"PriorityCalcPeriod": "00:01:00"}}) == 60.0
    assert priority_calc_period({"slurm_conf": {"PriorityCalcPeriod": "00:05:00"}, "containers": "trixie"}) == 300.0
    assert priority_calc_period({"containers": "trixie"}) == 60.0  # the suite renders 1 minute with slurmdbd
    assert priority_calc_period({"slurm_conf": {}}) == 300.0  # Slurm's default, 5 minutes
    t = replay_timing({"jobs": [], "slurmctld_start": T0 - 17.0}, replay_site_data("demo", power=False))
    assert t.priority_calc_period_s == 300.0 and t.priority_epoch == T0 - 17.0
    assert replay_timing({"jobs": []}, replay_site_data("demo", power=False),
                         priority_calc=False).priority_calc_period_s is None
    with pytest.raises(ValueError):
        SlurmTiming(priority_calc_period_s=0.0)


def test_site_factor_first_seen_after_the_start_counts_from_submit():
    # the recorder polls every few seconds: a job that starts within a second of its submit is first seen
    # (with the band its job_submit shim gave it at submit) after its start, truncated to whole seconds
    seen = [[T0 + 20.27, 4120000]]
    assert site_factor_at_start(seen, T0 + 20.0) == []
    assert site_factor_at_start(seen, T0 + 20.0, at_submit=True) == [4120000]
    # a value seen later than the start is left out when an earlier one was seen (a change after the start)
    later = [[T0 + 5.0, 2040000], [T0 + 30.0, 4120000]]
    assert site_factor_at_start(later, T0 + 20.0, at_submit=True) == [2040000]
    assert site_factor_at_start([], T0 + 20.0, at_submit=True) == []
    site = Site.model_validate(replay_site_data("demo", power=False))
    job = _job(1, 0, 0, 10, factor=7)  # the factor seen at 0.5 s, after the start at 0 s
    off = replay_table(site, [job], T0, SlurmTiming(site_factor=True))
    on = replay_table(site, [job], T0, SlurmTiming(site_factor=True, site_factor_submit=True))
    assert off.qos_priority.tolist() == [0.0] and on.qos_priority.tolist() == [7.0]
    assert replay_timing({"jobs": []}, replay_site_data("demo", power=False)).site_factor_submit


def test_energy_counts_a_job_busy_for_its_run_only_not_its_release():
    """The replay holds a job's node release_s past its end (the next job starts that much later), but the job
    is done: the node draws idle power then, as the real side counts it (busy from StartTime to EndTime), and
    the energy ends at the last recorded end."""
    site = Site.model_validate(replay_site_data("demo", power=False))
    jobs = [_job(1, 0, 0, 10, H100)]
    _, sim = _starts(jobs, SlurmTiming(release_s=2.0))
    h100 = site.group("gpu-h100")
    idle = sum(g.count * g.power.idle_w for g in site.node_groups)
    dyn = 8 * (h100.power.busy_w - h100.power.idle_w) / h100.cpu.cores  # the job's 8 of the node's cores
    assert sim["end"] == [pytest.approx(10.2)]  # submitted (and started) at 0.2 s, for 10 s
    assert sim["energy_j"] == pytest.approx(idle * 10.2 + dyn * 10.0)


def test_energy_of_a_job_waiting_for_its_other_node_to_boot_is_idle_power():
    """A 2-node x86 job gets x86n1 (on, running job 1) and x86n2 (powered down): slurmctld keeps it CONFIGURING
    until the time-limit check finds x86n2 up (70 s) and resets its StartTime then (22.05: ``Resetting
    JobId=40 start time for node power up``), so x86n1's share of it draws nothing before 70 s. The
    simulator's energy is the real side's accounting (real_power) of the simulator's own schedule."""
    site = Site.model_validate(replay_site_data("demo", power=True))
    jobs = [_job(1, 0, 0, 100, arch="x86_64", cores=1, limit_min=2), _job(2, 40, 70, 76, arch="x86_64", cores=8)]
    jobs[1]["spec"]["nodes"] = 2
    timing = SlurmTiming(suspend_time_s=20.0, shutdown_s=10.0, boot_s=3.0, config_tick_s=30.0,
                         config_epoch=T0 + 10.0, release_s=1.0)
    sim = simulate_record(site, {"jobs": jobs, "power": {}, "bf_cycles": []}, timing, trace=True)
    starts = dict(zip(sim["id"], sim["start"]))
    assert starts == {1: 0.0, 2: 70.0}
    hosts = _replay_hosts(site)
    power = {h: [(T0, "on")] for h in hosts}
    for t, node, what in sim["power_log"]:
        if what != "idle":
            power[hosts[node]].append((T0 + t, what))
    assert [s for _, s in power["x86n2"]][:5] == ["on", "shutting", "off", "booting", "on"]
    assert [s for _, s in power["x86n1"]][:1] == ["on"] and len(power["x86n1"]) <= 3  # on while job 1 runs
    record = {"jobs": [{"start": T0 + s, "end": T0 + e, "nodelist": n, "state": "COMPLETED", "spec": {"cores": c}}
                       for s, e, n, c in ((0.2, 100.2, "x86n1", 1), (70, 76, "x86n[1-2]", 8))],
              "power": power}
    end = max(sim["end"])
    assert end == pytest.approx(100.2)
    _, joules = real_power(record, site, T0, T0 + end)
    assert sim["energy_j"] == pytest.approx(joules)
