"""The live guard: its verdict (a case table), its lower-bound measurement of live outcomes, the step's rollback
decision and memory, the atomic and idempotent rollback of the policy file, and the cycle following the file."""

from __future__ import annotations

import dataclasses

import pytest

from slurm_plugin.cycle.active import ActivePolicy
from slurm_plugin.cycle.guard import GuardOptions, GuardStep, judge
from slurm_plugin.cycle.guard_memory import (GuardMemory, LiveOutcome, OpenJob, bsld, least_bsld, measure,
                                             memory_from_json, memory_to_json, observe)
from slurm_plugin.cycle.steps import CycleMemory, StepInputs, run_steps
from slurm_plugin.decision import Cause, SwitchPolicy
from slurm_plugin.policy import PolicyError, policy_from_dict
from slurm_plugin.decision.policy_file import content_sha256, switch_policy_file
from slurm_plugin.snapshot import JobState

from .builders import SITE, demo_snapshot


def twin(objective="avg_bsld", predicted=2.0, previous=None):
    return policy_from_dict({"twin": {"objective": objective, "predicted": {objective: predicted},
                                      "previous": previous}}).twin


def live(jobs=30, ended=30, avg_bsld=2.0, avg_wait_s=100.0):
    return LiveOutcome(jobs, ended, avg_bsld, avg_wait_s)


OPT = GuardOptions(margin=0.25, min_jobs=20, wait_slack_s=60.0)


@pytest.mark.parametrize("case,twin_,outcome,rollback,said", [
    ("no twin: never", None, live(avg_bsld=99.0), False, "no twin section"),
    ("on the prediction", twin(), live(avg_bsld=2.0), False, "within its twin"),
    ("at the margin exactly", twin(), live(avg_bsld=2.5), False, "within its twin"),
    ("past the margin", twin(), live(avg_bsld=2.51), True, "behind its twin: live avg_bsld >= 2.51 over 30 job(s)"),
    ("better than predicted", twin(), live(avg_bsld=1.0), False, "within"),
    ("too few jobs", twin(), live(jobs=19, avg_bsld=50.0), False, "19 job(s) since it went live, 20 needed"),
    ("no jobs at all", twin(), LiveOutcome(), False, "0 job(s)"),
    ("wait past the margin", twin("avg_wait_s", 400.0), live(avg_wait_s=501.0), True, "behind"),
    ("wait within the slack", twin("avg_wait_s", 10.0), live(avg_wait_s=69.0), False, "limit 70"),
    ("wait past the slack", twin("avg_wait_s", 10.0), live(avg_wait_s=71.0), True, "behind"),
    ("wait objective ignores bsld", twin("avg_wait_s", 400.0), live(avg_bsld=99.0, avg_wait_s=400.0), False, "within"),
])
def test_judge(case, twin_, outcome, rollback, said):
    verdict = judge(twin_, outcome, OPT)
    assert verdict.rollback is rollback, (case, verdict)
    assert said in verdict.reason, (case, verdict)


def test_bounded_slowdown_and_its_least_value_over_a_run_range():
    assert bsld(90, 10) == 10.0 and bsld(0, 5) == 1.0 and bsld(15, 5) == 2.0  # (wait + run) / max(run, 10 s)
    assert least_bsld(40, 0, 60) == pytest.approx(100 / 60)  # pending: the longest run gives the least
    assert least_bsld(40, 0, 5) == 4.0  # short limit: the shortest run (40 / 10)
    assert least_bsld(40, 20, None) == 1.0  # no limit: it could run forever


def job(job_id, state, submit, start=None, end=None, limit_min=1, nodes="armn1"):
    return JobState(job_id, state, partition="batch", submit_time=submit, start_time=start, end_time=end,
                    time_limit_min=limit_min, nodes=nodes if start else "")


def snap(t, jobs=(), finished=()):
    return dataclasses.replace(demo_snapshot(jobs, taken_at=t), finished=tuple(finished))


def test_observe_follows_each_job_of_the_period_to_its_end_and_counts_it_once():
    m = GuardMemory("abc", since=100.0)
    m = observe(m, snap(110, [job(1, "PENDING", 90), job(2, "PENDING", 100), job(3, "RUNNING", 101, start=105)]))
    assert sorted(m.open) == [2, 3]  # job 1 came before the policy went live
    assert m.open[3] == OpenJob(101.0, 105.0, 60.0, 5.0)
    # at 130: job 2 has waited 30 s (pending), job 3 runs with 25 s seen
    out = measure(m, 130)
    assert (out.jobs, out.ended) == (2, 0)
    assert out.avg_wait_s == pytest.approx((30 + 4) / 2)
    assert out.avg_bsld == pytest.approx((least_bsld(30, 0, 60) + least_bsld(4, 25, 60)) / 2)
    # job 3 ends (Slurm still lists it), job 4 is submitted and ends between two cycles, job 2 is cancelled
    ended = [job(3, "COMPLETED", 101, start=105, end=135), job(4, "COMPLETED", 120, start=125, end=128),
             job(2, "CANCELLED", 100)]
    m = observe(m, snap(140, finished=ended))
    assert (m.ended, m.open) == (2, {})
    assert m.sum_bsld == pytest.approx(bsld(4, 30) + bsld(5, 3)) and m.sum_wait_s == 9.0
    again = observe(m, snap(150, finished=ended))  # still listed: not counted twice
    assert (again.ended, again.sum_bsld) == (m.ended, m.sum_bsld)
    assert observe(again, snap(160)).settled == ()  # forgotten once Slurm forgets them


def test_a_job_submitted_in_the_second_the_policy_went_live_is_its_job():
    """Slurm's submit times are whole seconds: a job submitted at 100.7 reads 100 (found by the loop test)."""
    m = observe(GuardMemory("abc", since=100.4), snap(110, [job(1, "PENDING", 100), job(2, "PENDING", 99)]))
    assert sorted(m.open) == [1]
    m = observe(GuardMemory("abc", since=100.4), snap(110, finished=[job(3, "COMPLETED", 100, start=101, end=105)]))
    assert m.ended == 1


def test_a_running_job_gone_unseen_counts_with_its_run_bounded_by_when_it_was_seen():
    m = observe(GuardMemory("abc", since=0.0), snap(100, [job(1, "RUNNING", 10, start=40)]))
    m = observe(m, snap(130))  # gone, and Slurm no longer lists it: ran between 60 s and 90 s
    assert m.ended == 1 and m.sum_bsld == pytest.approx(least_bsld(30, 60, 90)) and m.sum_wait_s == 30.0


def test_memory_round_trips_through_json_and_a_new_file_digest_starts_a_new_period():
    m = observe(GuardMemory("abc", since=0.0), snap(100, [job(1, "RUNNING", 10, start=40)]))
    assert memory_from_json(memory_to_json(m)) == m
    assert m.watching("abc", 500.0) is m and m.watching("def", 500.0) == GuardMemory("def", 500.0)
    with pytest.raises(ValueError, match="unknown field"):
        memory_from_json({"policy": "x"})


def step_run(step, snapshot, memory=CycleMemory()):
    return run_steps((step,), snapshot, SITE, memory, snapshot.taken_at)


def starving(t0=1000.0, n=4):
    """n one-minute jobs pending since t0 - 120 s (each at least bsld 3 by now)."""
    return [job(i, "PENDING", t0 - 120) for i in range(1, n + 1)]


def test_the_step_rolls_back_to_previous_with_a_typed_cause_and_keeps_its_memory():
    step = GuardStep("/etc/hetsched/policy.yaml", "abc", twin(predicted=1.0, previous="/p/old.yaml"),
                     GuardOptions(min_jobs=4))
    memory = CycleMemory(guard=GuardMemory("abc", since=0.0))
    decision, memory = step_run(step, snap(1000.0, starving()), memory)
    [action] = decision.actions
    assert isinstance(action, SwitchPolicy) and action.cause is Cause.POLICY_ROLLBACK
    assert (action.path, action.to, action.from_sha256) == ("/etc/hetsched/policy.yaml", "/p/old.yaml", "abc")
    assert action.reason.startswith("behind its twin: live avg_bsld >= 3 over 4 job(s)")
    assert action.reason.endswith("back to /p/old.yaml")
    assert memory.guard.last["rollback"] and memory.guard.last["jobs"] == 4


def test_the_step_starts_watching_a_new_policy_and_does_not_judge_its_predecessor_s_jobs():
    step = GuardStep("p.yaml", "new", twin(predicted=1.0), GuardOptions(min_jobs=4))
    old = CycleMemory(guard=observe(GuardMemory("old", since=0.0), snap(900.0, starving())))
    decision, memory = step_run(step, snap(1000.0, starving()), old)
    assert decision.actions == () and memory.guard.policy_sha256 == "new" and memory.guard.since == 1000.0
    assert memory.guard.open == {}  # submitted before the new policy went live


def test_no_twin_no_rollback_however_bad():
    decision, memory = step_run(GuardStep("p.yaml", "abc", None, GuardOptions(min_jobs=1)), snap(1000.0, starving()))
    assert decision.actions == () and memory.guard.last["verdict"].startswith("no twin section")


def test_switch_policy_file_copies_previous_keeps_the_bad_one_and_is_idempotent(tmp_path):
    active, previous = tmp_path / "policy.yaml", tmp_path / "policy-20261130T100000Z.yaml"
    active.write_text("ranking: {name: fcfs}\n")
    previous.write_text("ranking: {name: sjf}\n")
    sha = content_sha256(active.read_bytes())
    said = switch_policy_file(active, previous, sha, "behind", now=0.0)
    assert "is now a copy of" in said
    assert active.read_text().splitlines()[1:] == ["ranking: {name: sjf}"]
    assert (tmp_path / "policy-rolled-back-19700101T000000Z.yaml").read_text() == "ranking: {name: fcfs}\n"
    before = sorted(tmp_path.iterdir())
    assert "left as it is" in switch_policy_file(active, previous, sha, "behind", now=1.0)  # done already
    assert sorted(tmp_path.iterdir()) == before


def test_switch_to_the_defaults_and_a_missing_previous_changes_nothing(tmp_path):
    active = tmp_path / "policy.yaml"
    active.write_text("ranking: {name: fcfs}\n")
    sha = content_sha256(active.read_bytes())
    with pytest.raises(OSError):
        switch_policy_file(active, tmp_path / "gone.yaml", sha, "behind")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy.yaml"]
    switch_policy_file(active, None, sha, "behind")
    from slurm_plugin.policy import PolicySpec, load_policy
    assert load_policy(active) == PolicySpec()


def test_active_policy_follows_the_file_and_keeps_the_last_good_one(tmp_path):
    f = tmp_path / "policy.yaml"
    f.write_text("ranking: {name: sjf}\npacking: {enabled: false}\n"
                 "twin: {objective: avg_bsld, predicted: {avg_bsld: 2}}\n")
    active = ActivePolicy(f, GuardOptions(min_jobs=3))
    config, ranker = active.refresh()
    assert not config.pack and ranker is not None
    assert (config.guard.sha256, config.guard.twin.predicted_value(), config.guard.options.min_jobs) == (
        content_sha256(f.read_bytes()), 2.0, 3)
    assert active.refresh()[0] is config  # unchanged file: nothing rebuilt
    f.write_text("ranking: {name: lifo}\n")  # a bad edit: the last good policy keeps running
    assert active.refresh()[0] is config
    f.write_text("packing: {enabled: true}\n")
    config2, _ = active.refresh()
    assert config2.pack and config2.guard.twin is None
    with pytest.raises(PolicyError, match="lifo"):
        f.write_text("ranking: {name: lifo}\n")
        ActivePolicy(f).refresh()


def test_the_site_policy_file_is_used_only_when_it_exists(tmp_path, monkeypatch):
    from slurm_plugin.decision.policy_file import site_policy_file

    monkeypatch.setenv("HETSCHED_POLICY_FILE", str(tmp_path / "policy.yaml"))
    assert site_policy_file() is None  # no file: the cycle keeps today's options
    (tmp_path / "policy.yaml").write_text("reshape: false\n")
    assert site_policy_file() == tmp_path / "policy.yaml"
