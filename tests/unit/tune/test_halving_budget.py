"""The ranking halving's budget rule (slurm_plugin/tune/sweep.py: extrapolate, budget_cut, halve with budget_s):
the pure decision (estimate, fit, what is kept) and, on a small real history, that a budget with room keeps every
candidate after rung 1 and one without room cuts as the forced halving does; then ``hetsched tune`` end to end."""

import json
import math

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.sim.run import prepare
from slurm_plugin.tune import report, sweep, tuner
from slurm_plugin.tune.score import Score
from slurm_plugin.tune.tuner import tune_history

from .histories import small_swf


def _s(obj: float, max_wait: float = 0.0) -> Score:
    return Score(obj, obj, 0.0, max_wait, 0.0, 10, 0, ())


def test_extrapolate_grows_as_jobs_to_the_power_growth():
    assert sweep.extrapolate(2.0, 1000, 9000, 1.0) == pytest.approx(18.0)
    assert sweep.extrapolate(2.0, 1000, 9000) == pytest.approx(2.0 * 9 ** 1.3)  # the default: GROWTH 1.3
    assert sweep.GROWTH == 1.3
    # the measured figures it was chosen from (results/tune/halving/replay-cost-100k.jsonl): x14.05 for x9 jobs
    # (FCFS, 2.99 -> 42.01 CPU s) and x4.15 for x3 (SJF+floor, 3.95 -> 16.41): 1.3 is at or above both
    assert math.log(42.01 / 2.99) / math.log(70000 / 7771) <= sweep.GROWTH
    assert math.log(16.41 / 3.95) / math.log(23310 / 7771) <= sweep.GROWTH + 0.005


A, B = ("fixed", True), ("weighted", True)
TODAY = {A: ["a1", "a2"], B: ["b1"]}
REST = [(A, "a3"), (B, "b2"), (A, "a4")]  # best first
COST = {(A, "a1"): 10.0, (A, "a2"): 10.0, (B, "b1"): 10.0, (A, "a3"): 20.0, (B, "b2"): 5.0, (A, "a4"): 1.0}


def test_budget_cut_keeps_everyone_when_the_full_sweep_fits():
    kept, est, full, outcome = sweep.budget_cut(TODAY, REST, COST, fixed_s=4.0, budget_s=60.0)
    assert outcome == "skipped" and est == full == pytest.approx(60.0)
    assert kept == {A: ["a1", "a2", "a3", "a4"], B: ["b1", "b2"]}


def test_budget_cut_adds_the_next_best_in_order_until_the_next_does_not_fit():
    # today's 30 + fixed 4 = 34; a3 (20) fits in 55 -> 54; b2 (5) would not: stop there (a4 is not tried)
    kept, est, full, outcome = sweep.budget_cut(TODAY, REST, COST, fixed_s=4.0, budget_s=55.0)
    assert outcome == "filled" and est == pytest.approx(54.0) and full == pytest.approx(60.0)
    assert kept == {A: ["a1", "a2", "a3"], B: ["b1"]}
    # no room for a3: nothing added, never fewer than today's
    kept, est, _, outcome = sweep.budget_cut(TODAY, REST, COST, fixed_s=4.0, budget_s=40.0)
    assert outcome == "filled" and kept == TODAY and est == pytest.approx(34.0)


def test_budget_cut_leaves_todays_cut_when_even_its_leaders_do_not_fit():
    kept, est, full, outcome = sweep.budget_cut(TODAY, REST, COST, fixed_s=4.0, budget_s=33.0)
    assert kept is None and outcome == "over" and est == pytest.approx(34.0) and full == pytest.approx(60.0)


def test_candidates_are_added_back_within_the_bound_first_then_by_gap_behind_their_best():
    scores = {"best": _s(10.0), "near": _s(12.0), "far": _s(30.0), "over": _s(11.0, max_wait=99.0)}
    order = sorted(["far", "over", "near"], key=lambda lab: sweep._gap(lab, scores, 50.0))
    assert order == ["near", "far", "over"]
    assert sweep._gap("near", scores, 50.0) == (0, pytest.approx(0.2))


def test_the_decision_says_what_it_did():
    d = sweep.BudgetDecision(0, "skipped", 180.4, 900.0, 11.4, 180.4, 20.0, 72, 72, 1.3)
    assert d.text().startswith("halving skipped after rung 1: full sweep estimated 180 CPU s within budget 900")
    assert "(rungs measured 11.4 + 72 tuning-part replays 149.0 + 20.0 after them, growth jobs^1.3)" in d.text()
    d = sweep.BudgetDecision(0, "filled", 850.0, 900.0, 11.4, 2000.0, 20.0, 30, 72, 1.3)
    assert "over budget 900" in d.text() and "kept 30 of 72" in d.text()
    assert d.as_dict()["outcome"] == "filled" and d.as_dict()["text"] == d.text()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return prepare(str(small_swf(tmp_path_factory.mktemp("hist") / "budget.swf", 400, 120)))


def test_halving_with_room_keeps_every_candidate_after_rung_1_and_chooses_as_the_full_sweep(prepared, monkeypatch):
    names = ("fcfs", "sjf")
    full = tune_history(prepared, (True,), jobs=1, names=names, race=False)
    monkeypatch.setattr(tuner, "RACE_MIN_JOBS", 100)  # this history's tuning part is 280 jobs: halve by default
    monkeypatch.setattr(sweep, "KEEP", 1)
    monkeypatch.setattr(sweep, "MARGIN", 0.0)
    roomy = tune_history(prepared, (True,), jobs=1, names=names, budget_cpu_s=1e6)
    h = roomy.halving
    assert h.budget_s == pytest.approx(1e6 * sweep.RANKING_SHARE)
    assert len(h.rungs) == 1 and h.dropped == [] and len(h.kept[True]) == 24  # 4 fixed + 20 weighted
    d = h.decisions[0]
    assert d.outcome == "skipped" and d.kept == d.alive == 24 and 0 < d.spent_s <= d.estimate_s < d.budget_s
    # the estimate: rung 1's measured CPU of each replay, extrapolated, plus what was spent and comes after
    n1, n = h.rungs[0][1], h.tune_jobs
    tuning = sum(sweep.extrapolate(h.cpu[(c.label, True, 0)], n1, n) for c in h.kept[True])
    assert d.estimate_s == pytest.approx(d.spent_s + tuning + d.after_s)
    assert roomy.modes[True].choice == full.modes[True].choice
    assert set(h.full_cpu) == {(c.label, True) for c in h.kept[True]} and len(h.growth_measured()) == 24
    text = report.explain(roomy)
    assert d.text() in text and "replay CPU growth measured" in text
    doc = report.halving_doc(roomy)
    assert doc["text"] == d.text() and doc["budget"][0]["outcome"] == "skipped"
    assert doc["growth_assumed"] == 1.3 and doc["growth_measured"]["candidates"] == 24
    # no room at all: every rung cuts as the forced halving does (same drops, same survivors)
    tight = tune_history(prepared, (True,), jobs=1, names=names, budget_cpu_s=1e-6)
    forced = tune_history(prepared, (True,), jobs=1, names=names, race=True)
    assert [d.outcome for d in tight.halving.decisions] == ["over", "over"] and forced.halving.decisions == []
    assert [c.label for c in tight.halving.kept[True]] == [c.label for c in forced.halving.kept[True]]
    assert ([(x.label, x.rung) for x in tight.halving.dropped] == [(x.label, x.rung) for x in forced.halving.dropped]
            and forced.halving.dropped)
    assert "budget rule not applied (--halving forced" in report.explain(forced)


def test_budget_with_room_for_some_keeps_todays_leaders_and_the_next_best(prepared, monkeypatch):
    """Each replay timed at 0.001 CPU s and estimated at 1 CPU s in full (nothing after the tuning part): a budget
    with room for today's rung-1 leaders and 1 more keeps exactly those and the next best by gap, and stops."""
    monkeypatch.setattr(tuner, "RACE_MIN_JOBS", 100)
    monkeypatch.setattr(sweep, "KEEP", 1)
    monkeypatch.setattr(sweep, "MARGIN", 0.0)
    names = ("fcfs", "sjf")
    forced = tune_history(prepared, (True,), jobs=1, names=names, race=True).halving
    at1 = [x for x in forced.dropped if x.rung == 0]
    today = 24 - len(at1)
    assert len(at1) >= 2  # on this history: sjf and sjf+floor (tied on the 31 jobs of rung 1)
    run_one = sweep.run_one
    monkeypatch.setattr(sweep, "_timed_run_one", lambda twin, task: (run_one(twin, task), 0.001))
    monkeypatch.setattr(sweep, "extrapolate", lambda cpu, n1, n, growth=1.3: 1.0)
    monkeypatch.setattr(sweep, "_after_tuning_part", lambda *a: 0.0)
    got = tune_history(prepared, (True,), jobs=1, names=names, budget_cpu_s=(today + 1.5) / sweep.RANKING_SHARE)
    h = got.halving
    d = h.decisions[0]
    assert d.outcome == "filled" and d.kept == today + 1 and len(h.rungs) == 1 and len(h.kept[True]) == today + 1
    assert d.estimate_s == pytest.approx(0.024 + today + 1) and d.full_s == pytest.approx(0.024 + 24)
    # the one added back is the first of today's rung-1 drops by gap behind its family's best (within the bound)
    gap = sorted(at1, key=lambda x: (x.max_wait_s > got.bound_s, x.objective / x.best_objective))
    kept = {c.label for c in h.kept[True]}
    assert gap[0].label in kept and not kept & {x.label for x in gap[1:]}
    assert {x.label for x in h.dropped} == {x.label for x in gap[1:]}
    assert all("the budget had no room" in x.reason for x in h.dropped)


def test_cli_budget_option_reaches_the_halving_and_the_json_says_halving_skipped(swf, monkeypatch):
    monkeypatch.setattr(tuner, "RACE_MIN_JOBS", 50)  # the swf fixture's tuning part: 105 jobs
    args = ["tune", "--history", str(swf), "--json", "-j", "1", "--candidates", "sjf", "--dqn-budget", "0",
            "--no-power", "--no-packing"]
    res = CliRunner().invoke(main, [*args, "--budget-cpu-s", "100000", "--explain"])
    assert res.exit_code == 0, res.output
    assert "halving skipped after rung 1: full sweep estimated" in res.stdout and "within budget 50000" in res.stdout
    res = CliRunner().invoke(main, [*args, "--budget-cpu-s", "100000"])
    doc = json.loads(res.stdout)
    h = doc["halving"]
    assert h["budget_cpu_s"] == 50000 and h["text"].startswith("halving skipped") and h["dropped"] == []
    assert len(h["rungs"]) == 1 and len(h["kept"]["on"]) == 22  # sjf, sjf+floor and the 20 weighted
    res = CliRunner().invoke(main, [*args, "--budget-cpu-s", "0.000001"])
    h = json.loads(res.stdout)["halving"]
    assert [d["outcome"] for d in h["budget"]] == ["over", "over"] and len(h["rungs"]) == 2
    res = CliRunner().invoke(main, [*args, "--halving"])
    h = json.loads(res.stdout)["halving"]
    assert h["budget_cpu_s"] is None and h["text"].startswith("budget rule not applied")
    res = CliRunner().invoke(main, [*args, "--budget-cpu-s", "0"])
    assert res.exit_code == 2 and "--budget-cpu-s" in res.output
