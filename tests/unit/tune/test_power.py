"""Power tuning (issue 13, item 3): the dominance selection (pure), the demand-aware idle timer's rule, its
reduction to Slurm's idle timer in the simulator (same schedule, same energy), and live/simulated agreement."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from slurm_plugin.cycle.policy import policy_steps
from slurm_plugin.cycle.steps import CycleMemory, run_steps
from slurm_plugin.decision import PowerNodes
from slurm_plugin.policy import PolicySpec, ScalingSpec
from slurm_plugin.policy.spec import PolicyError, policy_from_dict
from slurm_plugin.scale.planner import ScaleMemory
from slurm_plugin.scale.warm import demand_timer, timer_keep
from slurm_plugin.sim.engine import Engine
from slurm_plugin.sim.hooks import IdleSuspend, ranking
from slurm_plugin.sim.machine import SWF_NODE_POWER, Machine, machine_from_site
from slurm_plugin.sim.machine import GroupSpec
from slurm_plugin.sim.policy import sim_scaling
from slurm_plugin.sim.power import ON
from slurm_plugin.sim.run import Prepared
from slurm_plugin.sim.views import PowerView
from slurm_plugin.snapshot import JobState
from slurm_plugin.scale.warm import cycle_breakeven_s
from slurm_plugin.tune.power import (Part, PowerCandidate, Scores, candidates, chosen_index, energy_between,
                                     evaluate_power, machine_breakeven_s, match_timers, matched_graces,
                                     part_scores, qualifies, run_order, run_scores, scaling_section, sweep_rows,
                                     tune_power)
from slurm_plugin.tune.power_eval import markdown
from slurm_plugin.tune.split import split_history
from slurm_plugin.workload import ARCH_BIT, JobTable, Workload

from ..cycle.builders import SITE, demo_node, demo_snapshot

TIMER = PowerCandidate("idle-timer", "SuspendTime 300 s", ScalingSpec(name="idle-timer", suspend_time_s=300.0))
TIMER2 = PowerCandidate("idle-timer", "SuspendTime 900 s", ScalingSpec(name="idle-timer", suspend_time_s=900.0))
PLAN_A = PowerCandidate("matched-timer", "a", ScalingSpec(name="planner", wait_price_w=None, grace_s=900.0,
                                                     quiet_grace_s=156.0, arch=False))
PLAN_B = PowerCandidate("planner", "b", ScalingSpec(name="planner", arch=False))
CANDS = [TIMER, TIMER2, PLAN_A, PLAN_B]


# ---- the selection (pure): decided on the tuning part, the held-back part only reported ---------------------------
def sc(tune, blocks=None, test=(1.0, 1.0)):
    """Scores: the tuning part (energy, wait), its 5 blocks (default: the total spread evenly), the held-back part."""
    e, w = tune
    blocks = blocks or [(e / 5, w)] * 5
    return Scores(Part(e, w, 50), Part(*test, 20), tuple(Part(be, bw, 10) for be, bw in blocks))


STEADY = [(2.0, 100), (2.0, 100), (2.0, 100), (2.0, 100), (2.0, 100)]
# candidate A: 5 % less energy in total with the same waits in 3 blocks and better in 2; its waits in total
# are lower, but they are higher in 2 of 5 blocks (noise that a total alone would not see)
NOISY = [(1.9, 90), (1.9, 110), (1.9, 80), (1.9, 105), (1.9, 90)]
# (scores per candidate [timer 300, timer 900, A, B]) -> (outcome, pick) per timer
CASES = {
    "A qualifies against 300": (
        [sc((10, 100), STEADY), sc((12, 80)), sc((9.5, 100), [(1.9, 100)] * 5), sc((20, 10))],
        [("planner", 2), ("timer", None)]),
    "lower in total but worse in 2 of 5 blocks: the timer stays": (
        [sc((10, 100), STEADY), sc((12, 80)), sc((9.5, 95), NOISY), sc((20, 10))],
        [("timer", None), ("timer", None)]),
    "the same energy (an identical schedule) is no reason to switch": (
        [sc((10, 100), STEADY), sc((12, 80)), sc((10, 100), STEADY), sc((20, 10))],
        [("timer", None), ("timer", None)]),
    "least tuning energy among the qualifying ones": (
        [sc((10, 100)), sc((12, 80)), sc((11, 70)), sc((11.5, 60))],
        [("timer", None), ("planner", 2)]),
    "nothing qualifies": (
        [sc((10, 100)), sc((12, 80)), sc((13, 70)), sc((9, 120))],
        [("timer", None), ("timer", None)]),
}


@pytest.mark.parametrize("name", CASES)
def test_match_timers(name):
    scores, want = CASES[name]
    got = match_timers(CANDS, scores)
    assert [(m.outcome, m.pick) for m in got] == want
    assert [m.suspend_time_s for m in got] == [300.0, 900.0]


def test_the_held_back_part_is_reported_never_used():
    scores, _ = CASES["A qualifies against 300"]
    wins = match_timers(CANDS, [replace(s, test=Part(5.0, 50.0, 20)) for s in scores[:2]]
                        + [replace(scores[2], test=Part(4.0, 40.0, 20)), scores[3]])
    loses = match_timers(CANDS, [replace(s, test=Part(5.0, 50.0, 20)) for s in scores[:2]]
                         + [replace(scores[2], test=Part(6.0, 60.0, 20)), scores[3]])
    assert [(m.outcome, m.pick) for m in wins] == [(m.outcome, m.pick) for m in loses] == [("planner", 2),
                                                                                          ("timer", None)]
    assert (wins[0].held_back_dominates, loses[0].held_back_dominates) == (True, False)
    assert "held-back 6.0 kWh, 60 s vs the timer's 5.0 kWh, 50 s: does not dominate" in loses[0].reason
    assert wins[1].held_back_dominates is None  # no pick, nothing to report


def test_qualifies_counts_blocks_separately_for_energy_and_wait():
    timer = sc((10, 100), STEADY)
    ok, why = qualifies(sc((9.5, 100), [(1.9, 100)] * 4 + [(2.1, 100)]), timer)
    assert ok and "energy no more in 4/5 blocks, wait no more in 5/5" in why
    ok, why = qualifies(sc((9.0, 100), [(1.8, 100)] * 3 + [(2.1, 100)] * 2), timer)
    assert not ok and "energy no more in 3/5 blocks" in why


def test_the_chosen_setting_follows_the_sites_suspend_time():
    scores, _ = CASES["A qualifies against 300"]
    matches = match_timers(CANDS, scores)
    assert chosen_index(CANDS, matches, 300.0) == 2  # the planner replaces the site's 300 s timer
    assert chosen_index(CANDS, matches, 900.0) == 1  # nothing beat the 900 s timer: it stays
    with pytest.raises(ValueError, match="SuspendTime 60 s is not among the timers tried"):
        chosen_index(CANDS, matches, 60.0)
    assert matches[0].qualifying == 1 and "qualified" in matches[0].reason


def test_matched_timers_come_from_the_timer_and_the_power_cycles_break_even():
    assert cycle_breakeven_s(100.0, 5.0, 120.0, 30.0) == pytest.approx(30 + 120 * 100 / 95)  # 156.3 s
    assert cycle_breakeven_s(5.0, 5.0, 120.0, 30.0) == float("inf")
    assert machine_breakeven_s(MACHINE8) == 156.0
    assert matched_graces(60.0, 156.0) == (156.0, 60.0)  # a short timer: demand's nodes stop cycling
    assert matched_graces(3600.0, 156.0) == (3600.0, 156.0)  # a long one: the surplus goes down sooner
    assert matched_graces(156.0, 156.0) is None  # it would be the timer itself
    cands = candidates(False, (60.0, 3600.0), 156.0, (1000.0,))
    assert [(c.policy, c.scaling.grace_s if c.policy == "matched-timer" else None) for c in cands] == [
        ("idle-timer", None), ("idle-timer", None), ("matched-timer", 156.0), ("matched-timer", 3600.0),
        ("planner", None)]
    assert not [c for c in candidates(False) if c.policy != "idle-timer" and c.policy != "planner"]
    assert len([c for c in candidates(True) if c.policy == "planner+arch"]) == 2


def test_run_order_pairs_each_timer_with_its_matched_timer_site_timer_first():
    cands = candidates(False, (60.0, 300.0, 3600.0), 156.0, (1000.0,))
    order = [(cands[i].policy, cands[i].param.split(":")[0]) for i in run_order(cands, 300.0)]
    assert order == [("idle-timer", "SuspendTime 300 s"), ("matched-timer", "SuspendTime 300 s"),
                     ("idle-timer", "SuspendTime 3600 s"), ("matched-timer", "SuspendTime 3600 s"),
                     ("idle-timer", "SuspendTime 60 s"), ("matched-timer", "SuspendTime 60 s"),
                     ("planner", "wait price 1000 W")]


def test_candidates_list_every_timer_and_skip_the_arch_controller_on_one_architecture():
    one = candidates(False)
    assert [c.scaling.suspend_time_s for c in one if c.is_timer] == [60.0, 300.0, 900.0, 1800.0, 3600.0]
    assert not [c for c in one if c.policy == "planner+arch"]


def test_energy_between_splits_the_timeline_at_the_cut():
    tl = {"t": [0.0, 10.0, 30.0], "watts": [100.0, 50.0, 0.0]}
    assert energy_between(tl, 0.0, 30.0) == 100 * 10 + 50 * 20
    assert energy_between(tl, 5.0, 20.0) == 100 * 5 + 50 * 10
    assert energy_between(tl, 30.0, float("inf")) == 0.0


# ---- the rule -----------------------------------------------------------------------------------------------
def test_demand_timer_rule():
    assert demand_timer([100, 400, 200, 50], 1, 300, 40) == (0, 1, 2)  # the docstring's example
    idle = [10.0, 400.0, 200.0, 50.0]
    assert demand_timer(idle, 0, 300, 300) == (1,)  # quiet = grace: the idle timer at grace
    assert demand_timer(idle, 4, 300, 40) == (1,)  # everything kept: the idle timer at grace
    assert demand_timer(idle, 0, 300, 40) == (1, 2, 3)  # nothing kept: the idle timer at the quiet grace
    assert timer_keep(0.0, 900) == 0 and timer_keep(1 / 600, 900) == 2 and timer_keep(1 / 900, 900) == 1
    with pytest.raises(ValueError):
        demand_timer(idle, -1, 300, 40)


# ---- the reduction: quiet grace = grace is Slurm's idle timer, node for node -----------------------------------
def small_workload() -> JobTable:
    """Bursts of 1-3 node jobs with quiet gaps between them, on 8 nodes: nodes idle short and long."""
    rng = np.random.default_rng(7)
    submit = np.sort(np.concatenate([b + rng.exponential(120, 15) for b in (0, 6000, 9000, 20000, 21000)]))
    run = rng.exponential(900, len(submit)) + 30
    n = len(submit)
    return JobTable.build({"submit": submit.tolist(), "run": run.tolist(), "limit": (2 * run).tolist(),
                           "nodes": rng.integers(1, 4, n).tolist(), "cores": [1] * n})


MACHINE8 = Machine("eight", [GroupSpec("nodes", 8, **SWF_NODE_POWER)])


@pytest.mark.parametrize("suspend", [120.0, 600.0])
def test_demand_timer_at_its_own_grace_is_the_idle_timer(suspend):
    jobs = small_workload()
    timer = Engine(MACHINE8, jobs, ranking("fcfs"), backfill=True, scaling=IdleSuspend(suspend)).run()
    same = ScalingSpec(name="planner", wait_price_w=None, grace_s=suspend, quiet_grace_s=suspend)
    planner = Engine(MACHINE8, jobs, ranking("fcfs"), backfill=True,
                     scaling=sim_scaling(same, MACHINE8, jobs)).run()
    assert np.array_equal(timer.begin, planner.begin) and np.array_equal(timer.alloc, planner.alloc)
    assert timer.energy_j == planner.energy_j and timer.timeline == planner.timeline
    # and the comparison can fail: a shorter quiet grace powers nodes down sooner, another schedule
    sooner = ScalingSpec(name="planner", wait_price_w=None, grace_s=suspend, quiet_grace_s=suspend / 2)
    quick = Engine(MACHINE8, jobs, ranking("fcfs"), backfill=True, scaling=sim_scaling(sooner, MACHINE8, jobs)).run()
    assert quick.energy_j != timer.energy_j


def test_tune_power_on_a_small_history(tmp_path):
    jobs = small_workload()
    p = Prepared(None, MACHINE8, Workload("small", jobs))
    split = split_history(jobs)
    seen = []
    r = tune_power(p, split, "fcfs", jobs=1, progress=lambda d, t: seen.append((d, t)), timers=(60.0, 600.0),
                   prices=(10000.0,), cache=tmp_path)
    # timers 60, 300 (the default SuspendTime, added), 600; their three matched timers; the planner
    assert seen[-1] == (7, 7) and r.suspend_time_s == 300.0
    assert [m.suspend_time_s for m in r.matches] == [60.0, 300.0, 600.0]
    rows = r.rows()
    assert sum(row["chosen"] for row in rows) == 1
    assert [row["outcome"] in ("planner", "timer") for row in rows if row["policy"] == "idle-timer"] == [True] * 3
    assert set(rows[0]) >= {"policy", "param", "energy_kwh", "avg_wait_s", "chosen"}
    for i, c in enumerate(r.candidates):  # the parts and the blocks add up to the whole run
        run = Engine(MACHINE8, jobs, ranking("fcfs"), backfill=True,
                     scaling=sim_scaling(c.scaling, MACHINE8, jobs)).run()
        assert r.tune[i].energy_kwh + r.test[i].energy_kwh == pytest.approx(run.energy_j / 3.6e6, rel=1e-9)
        s = run_scores(jobs.submit, run.begin, run.timeline, split)
        assert s == r.scores[i] and (s.tune, s.test) == part_scores(jobs.submit, run.begin, run.timeline, split)
        assert sum(b.energy_kwh for b in s.blocks) == pytest.approx(s.tune.energy_kwh, rel=1e-9)
        assert sum(b.jobs for b in s.blocks) == s.tune.jobs == split.tune_jobs
    for c in r.candidates:  # each setting written as a policy file's scaling: reads back as itself
        assert policy_from_dict({"scaling": scaling_section(c.scaling)}).scaling == c.scaling
    # a second run reads every candidate back from the cache (a tampered entry shows it was read, not re-run)
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 7
    doc = json.loads(files[0].read_text())
    doc["tune"][0] = 1e6
    files[0].write_text(json.dumps(doc))
    again = tune_power(p, split, "fcfs", jobs=1, timers=(60.0, 600.0), prices=(10000.0,), cache=tmp_path)
    assert sorted(s.tune.energy_kwh for s in again.scores)[-1] == 1e6
    assert [s.test for s in again.scores] == [s.test for s in r.scores]
    table = markdown(r.as_dict()).splitlines()  # results/tune/power.md's tables: one row per timer
    assert len(table) == 2 + 3 and table[2].startswith("| 60 s |") and table[4].startswith("| 600 s |")


def test_evaluate_power_gives_hetsched_tune_its_rows(tmp_path):
    from slurm_plugin.tune.sweep import Twin

    twin = Twin.of(Prepared(None, MACHINE8, Workload("small", small_workload())), "avg_bsld")
    rows = evaluate_power(twin, backfill=False, jobs=1, timers=(300.0,), prices=())
    assert [(r["policy"], r["backfill"]) for r in rows] == [("idle-timer", False), ("matched-timer", False)]
    assert sum(r["chosen"] for r in rows) == 1
    # the same rows from a committed sweep's JSON
    path = tmp_path / "power.json"
    path.write_text(json.dumps({"backfill": False, "power": rows}))
    assert [{k: r[k] for k in ("policy", "param", "energy_kwh", "avg_wait_s", "chosen", "backfill")}
            for r in sweep_rows(path)] == [{k: r[k] for k in ("policy", "param", "energy_kwh", "avg_wait_s",
                                                              "chosen", "backfill")} for r in rows]
    path.write_text(json.dumps({"power": [{"policy": "idle-timer"}]}))
    with pytest.raises(ValueError, match=r"power.json: power\[0\] lacks param, energy_kwh"):
        sweep_rows(path)
    with pytest.raises(ValueError, match="nothing.json: not a power_eval result"):
        sweep_rows(tmp_path / "nothing.json")


# ---- the policy file and the live planner ---------------------------------------------------------------------
def test_policy_file_reads_the_demand_timer_and_refuses_it_elsewhere():
    spec = policy_from_dict({"scaling": {"name": "planner", "wait_price_w": None, "grace_s": 1800,
                                         "quiet_grace_s": 300}})
    assert spec.scaling.quiet_grace_s == 300.0
    with pytest.raises(PolicyError, match="scaling.quiet_grace_s: only the planner with wait_price_w: null"):
        policy_from_dict({"scaling": {"name": "planner", "quiet_grace_s": 300}})
    with pytest.raises(PolicyError, match="scaling.warm_nodes: not read by the demand-aware idle timer"):
        policy_from_dict({"scaling": {"name": "planner", "wait_price_w": None, "quiet_grace_s": 300,
                                      "warm_nodes": 1}})


NOW = 1_000_000.0
# idle seconds per idle node; one arm job (1 node) submitted 600 s ago: keep 1 arm node
IDLE = {"x86n1": 200.0, "x86n2": 50.0, "armn1": 100.0, "armn2": 1000.0, "armn3": 2000.0, "rvn1": 30.0}
HOSTS = [h for g in SITE.node_groups for h in g.hostnames]


def test_live_and_simulated_demand_timer_power_down_the_same_nodes():
    spec = PolicySpec(scaling=ScalingSpec(name="planner", wait_price_w=None, grace_s=1800.0, quiet_grace_s=60.0,
                                          arch=False))
    busy = {h: demo_node(h, "allocated", alloc=1) for h in HOSTS if h not in IDLE}
    job = JobState(100, "RUNNING", partition="arm", cpus=1, node_count=1, submit_time=int(NOW - 600))
    snap = demo_snapshot([job], taken_at=NOW, **busy)
    memory = CycleMemory(ScaleMemory(idle_since={h: NOW - t for h, t in IDLE.items()}, last_t=NOW - 60))
    decision, _ = run_steps(policy_steps(spec), snap, SITE, memory, NOW)
    live = {n for a in decision.actions if isinstance(a, PowerNodes) and a.action == "POWER_DOWN" for n in a.nodes}
    assert not [a for a in decision.actions if isinstance(a, PowerNodes) and a.action == "POWER_UP"]

    machine = machine_from_site(SITE)
    jobs = JobTable.build({"submit": [NOW - 600], "run": [3600.0], "limit": [3600.0], "nodes": [1], "cores": [1],
                           "arch_mask": [ARCH_BIT["aarch64"]]})
    hook = sim_scaling(spec.scaling, machine, jobs)
    idle_for = np.array([IDLE.get(h, -1.0) for h in HOSTS])
    down, up = hook.decide(PowerView(NOW, np.full(len(HOSTS), ON), idle_for, 0))
    assert live == {HOSTS[i] for i in down} and not len(up)
    # arm keeps its most recently idle node (armn1); x86 had no arrival: x86n1 (200 s) goes, x86n2 (50 s) not yet
    assert live == {"x86n1", "armn2", "armn3"}


# ---- successive halving of the power candidates (tune/power.py: halve_power) ---------------------------------------
def test_dominance_gap_and_a_rungs_leaders():
    from slurm_plugin.tune.power import dominance_gap, power_leaders

    t = Part(10.0, 100.0, 5)
    assert dominance_gap(Part(9.0, 90.0, 5), t) == pytest.approx(-0.1)
    assert dominance_gap(Part(12.0, 50.0, 5), t) == pytest.approx(0.2)  # more energy: the larger excess counts
    assert dominance_gap(Part(5.0, 130.0, 5), t) == pytest.approx(0.3)
    # timers 0 (300 s) and 1 (900 s); A is 5 % over timer 0 (within 10 %: kept), B is nearest to timer 1, C is
    # 40 % over both and not among the best third of three (1): dropped, nearest to timer 1
    parts = {0: Part(10.0, 100.0, 5), 1: Part(12.0, 80.0, 5), 2: Part(10.5, 100.0, 5), 3: Part(12.5, 82.0, 5),
             4: Part(17.0, 60.0, 5)}
    kept, why = power_leaders(CANDS + [PowerCandidate("planner", "c", ScalingSpec(name="planner"))], parts)
    assert kept == {2, 3} and set(why) == {4}
    gap, timer, best, best_gap = why[4]
    assert timer == 1 and gap == pytest.approx(17 / 12 - 1) and best == 3 and best_gap == pytest.approx(12.5 / 12 - 1)
    # at least keep per timer: with keep 3 nobody is dropped
    assert power_leaders(CANDS + [PowerCandidate("planner", "c", ScalingSpec(name="planner"))], parts, keep=3)[1] == {}


def test_match_timers_never_picks_a_candidate_the_halving_dropped():
    scores = CASES["A qualifies against 300"][0]
    assert [(m.outcome, m.pick) for m in match_timers(CANDS, scores)] == [("planner", 2), ("timer", None)]
    assert [(m.outcome, m.pick) for m in match_timers(CANDS, scores, alive={3})] == [("timer", None), ("timer", None)]


def test_power_halving_replays_only_the_survivors_on_the_whole_history(monkeypatch):
    from slurm_plugin.tune import power
    from slurm_plugin.tune.power_eval import summary

    jobs = small_workload()
    p = Prepared(None, MACHINE8, Workload("small", jobs))
    split = split_history(jobs)
    whole = []
    simulate = power._simulate
    monkeypatch.setattr(power, "_simulate", lambda shared, i: whole.append(i) or simulate(shared, i))
    kw = dict(jobs=1, timers=(60.0, 600.0), prices=(1000.0, 10000.0))
    full = tune_power(p, split, "fcfs", halving=False, **kw)
    n = len(full.candidates)
    assert full.halving is None and sorted(whole) == list(range(n)) and n == 8
    whole.clear()
    cut = tune_power(p, split, "fcfs", halving=True, **kw)
    h = cut.halving
    # rungs: the first ninth and the first third of the tuning part, every candidate on the first
    assert h.rungs[0] == (1 / 9, split_history(jobs.take(np.arange(split.boundary)), 1 / 9).boundary, n)
    dropped = {d.index for d in h.dropped}
    assert dropped and sorted(whole) == sorted(h.kept) and len(whole) == n - len(dropped)
    assert any(not cut.candidates[i].is_timer for i in h.kept)  # some non-timer survived
    assert all(not cut.candidates[d.index].is_timer and d.gap > 0.10 and d.reason for d in h.dropped)
    assert cut.scores[min(dropped)] is None and cut.chosen not in dropped
    assert all(m.pick is None or m.pick not in dropped for m in cut.matches)
    assert any(k.startswith("power: halving rung 1") for k in cut.cpu) and any("whole history" in k for k in cut.cpu)
    rows = cut.rows()
    assert rows[min(dropped)]["energy_kwh"] is None and rows[min(dropped)]["dropped"]["rung"] >= 1
    doc = json.loads(json.dumps(cut.as_dict()))
    assert [d["index"] for d in doc["halving"]["dropped"]] == [d.index for d in h.dropped]
    text = summary(cut)
    d = h.dropped[0]
    assert "power successive halving (rung 1: the first" in text and f"| {d.policy} {d.param} |" in text
    # the evaluation replays the dropped ones for their rows, and still never picks them
    whole.clear()
    ev = tune_power(p, split, "fcfs", halving=True, report_dropped=True, **kw)
    assert sorted(whole) == list(range(n)) and ev.scores[min(dropped)] is not None
    assert ev.chosen == cut.chosen and [m.pick for m in ev.matches] == [m.pick for m in cut.matches]
    # a halving that keeps everyone chooses exactly as the full sweep
    monkeypatch.setattr(power, "HALVING_KEEP", 100)
    kept = tune_power(p, split, "fcfs", halving=True, **kw)
    assert kept.halving.dropped == [] and kept.chosen == full.chosen
    assert [(m.outcome, m.pick) for m in kept.matches] == [(m.outcome, m.pick) for m in full.matches]


def test_power_halving_is_on_by_the_tuning_parts_length_but_not_in_the_evaluation(monkeypatch):
    from slurm_plugin.tune import sweep

    jobs = small_workload()
    p = Prepared(None, MACHINE8, Workload("small", jobs))
    split = split_history(jobs)
    kw = dict(jobs=1, timers=(), prices=(10000.0,))
    assert tune_power(p, split, "fcfs", **kw).halving is None  # 52 tuning jobs: below the threshold
    monkeypatch.setattr(sweep, "RACE_MIN_JOBS", 10)
    assert tune_power(p, split, "fcfs", **kw).halving is not None
    # the evaluation replays every candidate for its rows anyway: the rungs would only add cost
    assert tune_power(p, split, "fcfs", report_dropped=True, **kw).halving is None
    assert tune_power(p, split, "fcfs", report_dropped=True, halving=True, **kw).halving is not None
