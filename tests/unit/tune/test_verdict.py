"""The evaluation's verdict (tune/verdict.py): the tuned choice is judged against the best fixed heuristic that
keeps the max-wait bound on the held-back part; the unconstrained best is shown beside it, and a verdict with
no fixed heuristic within the bound says so."""

from __future__ import annotations

import pytest

from slurm_plugin.tune.verdict import CHOICE_OVER, NO_BOUND, NONE_WITHIN, WITHIN, judge, judge_evaluation


def row(policy, bsld, max_wait, chosen=False, family="fixed", backfill=True):
    return {"policy": policy, "backfill": backfill, "avg_bsld": bsld, "avg_wait_s": 1.0, "max_wait_s": max_wait,
            "chosen": chosen, "family": family}


# KTH-SP2 without backfill, held back (results/tune/KTH-SP2-1996-2.1-cln.json, abridged): F1 is best in
# hindsight but starves a job 62 days; the DQN is the best fixed one within the 302,400 s bound
KTH_OFF = [row("f1", 30.558, 5396620.0, backfill=False), row("dqn", 42.81, 250000.0, backfill=False),
           row("sjf", 45.0, 400000.0, backfill=False),
           row("weighted(est=1,size=0.5,age=0)", 31.445, 253812.0, chosen=True, family="weighted", backfill=False)]


def test_judged_against_the_best_fixed_within_the_bound_not_the_one_over_it():
    v = judge(KTH_OFF, 302400.0)
    assert v.basis == WITHIN and v.comparator.policy == "dqn" and v.verdict == "better"
    assert v.gain_pct == pytest.approx(100 * (31.445 / 42.81 - 1))
    assert (v.within, v.fixed) == (1, 3)
    # the unconstrained best is still reported, with what it costs
    assert v.unconstrained.policy == "f1" and v.unconstrained.max_wait_s == 5396620.0
    assert "f1 30.56 (max wait 5396620 s; tuned vs it +2.9 %)" in v.text()
    assert v.tuned_within_bound is True


def test_no_fixed_heuristic_within_the_bound_is_said_plainly():
    rows = [row("dqn", 17.82, 7.4e6), row("sjf", 20.0, 5e6), row("w", 16.21, 7e6, chosen=True, family="weighted")]
    v = judge(rows, 211107.0)
    assert v.basis == NONE_WITHIN and v.within == 0 and v.comparator == v.unconstrained
    assert v.comparator.policy == "dqn" and v.verdict == "better"
    assert "no fixed heuristic meets the max-wait bound 211107 s" in v.text()
    assert "the tuned choice itself is over the bound held back (max wait 7000000 s)" in v.text()


def test_without_a_bound_the_unconstrained_best_is_the_comparator():
    v = judge(KTH_OFF, None)
    assert v.basis == NO_BOUND and v.comparator.policy == "f1" and v.verdict == "WORSE"
    assert v.tuned_within_bound is None and "no max-wait bound" in v.text()


def test_only_fixed_rows_compare_and_ties_are_strict():
    rows = [row("sjf", 5.0, 10.0), row("sjf+floor", 5.0, 10.0, chosen=True),
            row("dqn-finetuned", 1.0, 1.0, family="finetuned")]  # the fine-tuned DQN is not a fixed heuristic
    v = judge(rows, 100.0)
    assert v.comparator.policy in ("sjf", "sjf+floor") and v.verdict == "tie"
    assert "it is also the best fixed regardless of the bound" in v.text()
    rows[1] = row("sjf+floor", 5.0 * (1 + 1e-6), 10.0, chosen=True)
    assert judge(rows, 100.0).verdict == "WORSE"


def test_bad_rows_are_refused():
    with pytest.raises(ValueError, match="exactly one chosen"):
        judge([row("sjf", 1.0, 1.0)], None)
    with pytest.raises(ValueError, match="at least one fixed"):
        judge([row("w", 1.0, 1.0, chosen=True, family="weighted")], None)


def test_per_mode_on_an_evaluation_document():
    doc = {"max_wait_bound_s": 302400.0,
           "ranking": KTH_OFF + [row("sjf", 24.49, 156530.0),
                                 row("dqn+floor", 24.87, 133774.0, chosen=True)]}
    got = judge_evaluation(doc)
    assert got["on"].verdict == "WORSE" and got["on"].comparator.policy == "sjf"
    assert got["off"].verdict == "better" and got["off"].comparator.policy == "dqn"
    assert got["off"].as_dict()["text"].startswith("better: weighted(est=1,size=0.5,age=0) 31.45 vs dqn 42.81")


def test_a_mode_without_fixed_candidates_has_no_verdict():
    doc = {"max_wait_bound_s": None, "ranking": [row("w", 1.0, 1.0, chosen=True, family="weighted")]}
    assert judge_evaluation(doc) == {}


def test_a_choice_over_the_bound_is_judged_against_the_unconstrained_best():
    """A history whose held-back part ran the tuned F1 past the bound (unseen-session19 C, backfill on, abridged):
    it paid nothing for the bound there, so the DQN, best regardless of it, is the comparator, not the best of
    the fixed heuristics that kept it."""
    rows = [row("dqn", 28.68, 1444972.0), row("dqn+floor", 205.73, 229000.0),
            row("f1", 37.55, 1531862.0, chosen=True)]
    v = judge(rows, 240299.0)
    assert v.basis == CHOICE_OVER and v.comparator.policy == "dqn" and v.verdict == "WORSE"
    assert (v.within, v.fixed) == (1, 3) and v.tuned_within_bound is False
    assert "the tuned choice is over the max-wait bound 240299 s held back (1 of 3 fixed heuristics keep it)" \
        in v.text()
    # within the bound, it is judged among the fixed ones that keep it (itself included: a tie)
    v = judge([*rows[:2], row("f1", 37.55, 200000.0, chosen=True)], 240299.0)
    assert v.basis == WITHIN and v.comparator.policy == "f1" and v.verdict == "tie"
