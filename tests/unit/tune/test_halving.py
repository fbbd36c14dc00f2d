"""Successive halving in the tuner's sweep (slurm_plugin/tune/sweep.py): a rung's leaders, the prefix twin, a
halving that keeps every candidate choosing what the full sweep chooses, and one that cuts recording each drop
with its rung and reason (real simulator, small history)."""

import numpy as np
import pytest

from slurm_plugin.sim.run import prepare
from slurm_plugin.tune import report, sweep
from slurm_plugin.tune.score import Score
from slurm_plugin.tune.tuner import tune_history

from .histories import small_swf


def _s(obj: float, max_wait: float = 0.0) -> Score:
    return Score(obj, obj, 0.0, max_wait, 0.0, 10, 0, ())


def test_leaders_keep_the_best_within_the_bound_and_those_within_the_margin():
    scores = {"a": _s(10.0), "b": _s(5.0, max_wait=99.0), "c": _s(6.0), "d": _s(6.5), "e": _s(20.0), "f": _s(6.3)}
    # b is over the bound: out; best within it is c (6.0); keep 1 plus 6.0 * 1.06 = 6.36 -> f, not d
    assert sweep.leaders(scores, bound_s=50.0, keep=1, margin=0.06) == ["c", "f"]
    assert sweep.leaders(scores, bound_s=50.0, keep=3, margin=0.0) == ["c", "d", "f"]
    # no candidate within the bound: the bound is dropped, as the selection rule drops it
    assert sweep.leaders(scores, bound_s=-1.0, keep=1, margin=0.0) == ["b"]
    assert sweep.leaders(scores, bound_s=None, keep=2, margin=0.0) == ["b", "c"]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """400 jobs on a 16-node machine, loaded enough that the rankings differ on the screen's 56 jobs."""
    return prepare(str(small_swf(tmp_path_factory.mktemp("hist") / "race.swf", 400, 120)))


def test_screen_twin_is_a_prefix_of_the_tuning_part_scored_on_its_own_inner_split(prepared):
    twin = sweep.Twin.of(prepared, "avg_bsld")
    pre = sweep.screen_twin(twin, 0.3)
    n = len(pre.tune.workload.jobs)
    assert 0.25 * twin.split.tune_jobs <= n <= 0.35 * twin.split.tune_jobs
    assert np.array_equal(pre.tune.workload.jobs.submit, twin.tune.workload.jobs.submit[:n])
    m = pre.masks["tune"]
    assert len(m["train"]) == n and not (m["train"] & m["val"]).any() and m["val"][-1] and m["train"][0]


def test_a_dropped_candidate_says_over_the_bound_or_how_far_behind():
    scores = {"a": _s(10.0), "b": _s(5.0, max_wait=99.0), "c": _s(6.0), "d": _s(6.6)}
    assert sweep._why_dropped("b", scores, 50.0, 1, 0.05) == ("c", "max wait 99 s over the bound 50 s")
    best, why = sweep._why_dropped("d", scores, 50.0, 1, 0.05)
    assert best == "c" and why.startswith("rank 2 of 4, +10.0% behind c") and "best 1 nor within 5%" in why


def test_halving_that_keeps_everyone_chooses_as_the_full_sweep_and_one_that_cuts_replays_fewer(prepared, monkeypatch):
    names = ("fcfs", "sjf")
    tune_jobs, replays = len(sweep.Twin.of(prepared, "avg_bsld").tune.workload.jobs), []
    run_one = sweep.run_one
    monkeypatch.setattr(sweep, "run_one", lambda twin, task: replays.append(len(twin.tune.workload.jobs)
                                                                            if task[2] == "tune" else -1)
                        or run_one(twin, task))
    full = tune_history(prepared, (True,), jobs=1, names=names, race=False)
    in_full = replays.count(tune_jobs)
    assert full.halving is None and sum(full.cpu.values()) > 0
    monkeypatch.setattr(sweep, "KEEP", 100)
    kept = tune_history(prepared, (True,), jobs=1, names=names, race=True)
    assert kept.modes[True].choice == full.modes[True].choice and kept.modes[True].fitted == full.modes[True].fitted
    assert ({k: v["val"] for k, v in kept.modes[True].tune_scores.items()} ==
            {k: v["val"] for k, v in full.modes[True].tune_scores.items()})
    assert kept.halving.dropped == [] and [n for _, _, n in kept.halving.rungs] == [24, 24]
    monkeypatch.setattr(sweep, "KEEP", 1)
    monkeypatch.setattr(sweep, "MARGIN", 0.0)
    replays.clear()
    cut = tune_history(prepared, (True,), jobs=1, names=names, race=True)
    h = cut.halving
    (s1, n1, r1), (s2, n2, r2) = h.rungs
    # every candidate (4 fixed + 20 grid) on the first ninth; what each rung kept (the best third of each family
    # and any tied with its best) goes on; what it did not is recorded as dropped there
    at = [d.rung for d in h.dropped]
    assert n1 < n2 < tune_jobs and r1 == 24 and r2 == 24 - at.count(0) < 24
    assert replays.count(n1) == 24 and replays.count(n2) == r2 and replays.count(tune_jobs) < in_full
    assert len(h.kept[True]) == r2 - at.count(1) and not {d.label for d in h.dropped} & {c.label for c in h.kept[True]}
    assert all(d.reason for d in h.dropped)
    assert cut.modes[True].choice.winner in {c.label for c in cut.modes[True].candidates}
    # the evaluation protocol judges the choice against every fixed ranking held back, dropped or not
    ev = tune_history(prepared, (True,), jobs=1, names=names, race=True, evaluate_all=True)
    fixed_rows = {r["policy"] for r in report.evaluation(ev)["ranking"] if r["family"] == "fixed"}
    assert fixed_rows == {"fcfs", "fcfs+floor", "sjf", "sjf+floor"} and ev.halving.dropped
    text = report.explain(cut)
    assert "successive halving (rung 1: the first" in text
    d = h.dropped[-1]
    assert f"| on | 2 ({d.jobs} jobs) | {d.label} | " in text and d.reason in text
