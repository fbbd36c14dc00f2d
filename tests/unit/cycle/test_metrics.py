"""The cycle's Prometheus series move with what each cycle decided and what became of it."""

from __future__ import annotations

import pytest

from slurm_plugin.cycle.metrics import CycleMetrics
from slurm_plugin.decision import Cause, Decision, PowerNodes, SetSiteFactor
from slurm_plugin.decision.applier import Applied
from tests.unit.daemon.test_metrics import samples


def _decision(source: str) -> Decision:
    return Decision((SetSiteFactor((1, 2), 8000, "band 2", Cause.RANKING),
                     PowerNodes(("armn1",), "POWER_UP", "3 jobs wait", Cause.BACKLOG)), source,
                    (("rank", 0.004), ("power", 0.02)))


def test_steps_actions_outcomes_and_ranking():
    m = CycleMetrics()
    d = _decision("rank:dqn+power")
    m.cycle_done(d, [Applied(d.actions[0], True), Applied(d.actions[1], False, "boom")], 0.3, 1000.0)
    d2 = _decision("rank:fallback-multifactor+power")
    m.cycle_done(d2, [Applied(a, False, "gone", attempted=False) for a in d2.actions], 0.01, 1010.0, 1)
    m.cycle_failed(2)
    got = samples(m.text())
    assert got[("hetsched_cycle_runs_total", (("outcome", "ok"),))] == 1
    assert got[("hetsched_cycle_runs_total", (("outcome", "aborted"),))] == 1
    assert got[("hetsched_cycle_runs_total", (("outcome", "failed"),))] == 1
    assert got[("hetsched_cycle_step_seconds_count", (("step", "apply"),))] == 2
    assert got[("hetsched_cycle_step_seconds_sum", (("step", "power"),))] == pytest.approx(0.04)
    assert got[("hetsched_cycle_actions_total", (("cause", "RANKING"), ("kind", "site_factor"),
                                                 ("status", "ok")))] == 1
    assert got[("hetsched_cycle_actions_total", (("cause", "BACKLOG"), ("kind", "power"), ("status", "failed")))] == 1
    assert got[("hetsched_cycle_actions_total", (("cause", "BACKLOG"), ("kind", "power"),
                                                 ("status", "not-attempted")))] == 1
    assert got[("hetsched_cycle_last_success_timestamp_seconds", ())] == 1000.0  # the aborted one is no success
    assert got[("hetsched_cycle_consecutive_failures", ())] == 2
    assert got[("hetsched_cycle_ranking", (("source", "rank:dqn"),))] == 0
    assert got[("hetsched_cycle_ranking", (("source", "rank:fallback-multifactor"),))] == 1


def test_dry_run_counts_planned_actions():
    m = CycleMetrics()
    m.cycle_done(_decision("rank:off+power"), None, 0.0, 5.0)
    got = samples(m.text())
    assert got[("hetsched_cycle_actions_total", (("cause", "BACKLOG"), ("kind", "power"), ("status", "planned")))] == 1


def test_packing_solver_status_and_gap():
    m = CycleMetrics()
    d = Decision((), "rank:off", notes=(("pack.status", "optimal"), ("pack.gap", 0.0)))
    m.cycle_done(d + Decision((), "pack", notes=(("pack.status", "feasible"), ("pack.gap", 0.03))), [], 0.0, 1.0)
    got = samples(m.text())
    assert got[("hetsched_cycle_pack_solves_total", (("status", "feasible"),))] == 1  # the last note of a name wins
    assert got[("hetsched_cycle_pack_gap", ())] == pytest.approx(0.03)
