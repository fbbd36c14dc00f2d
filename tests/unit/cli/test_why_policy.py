"""`hetsched why policy` on files: the running policy's ranking and why `hetsched tune` chose it (``twin.why``)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cycle.guard_memory import GuardMemory, save_guard_memory

TUNED = ("ranking: {name: weighted, w_estimate: 1, w_size: 1, w_age: 0.25}\n"
         "twin: {objective: avg_bsld, predicted: {avg_bsld: 3.2}, why: \"objective 3.1; the best objective; keeping "
         "the max-wait bound (90000 s) would cost 7.6x the best objective (dqn), over the price limit 1.5x\"}\n")


def _run(tmp_path, policy_text: str | None, *extra: str):
    policy, state = tmp_path / "policy.yaml", tmp_path / "guard-state.json"
    if policy_text is not None:
        policy.write_text(policy_text)
    save_guard_memory(state, GuardMemory("ab" * 32, 1.7e9, last={"path": str(policy), "t": 1.7e9,
                                                                 "verdict": "on track"}))
    return CliRunner().invoke(main, ["why", "policy", "--journal", str(tmp_path / "journal.jsonl"),
                                     "--guard-state", str(state), *extra])


def test_the_ranking_and_tunes_reason_are_shown(tmp_path):
    res = _run(tmp_path, TUNED)
    assert res.exit_code == 0, res.output
    assert "ranking: weighted(est=1,size=1,age=0.25)+floor (tune: objective 3.1; the best objective; keeping the " \
           "max-wait bound (90000 s) would cost 7.6x" in res.stdout
    doc = json.loads(_run(tmp_path, TUNED, "--json").stdout)
    assert doc["ranking"] == "weighted(est=1,size=1,age=0.25)+floor" and doc["chosen_because"].startswith("objective 3.1")


def test_a_hand_written_policy_has_a_ranking_and_no_reason_and_a_bad_one_is_said(tmp_path):
    res = _run(tmp_path, "ranking: {name: sjf, age_floor: true}\n")
    assert res.exit_code == 0 and "ranking: sjf+floor\n" in res.stdout and "(tune:" not in res.stdout
    res = _run(tmp_path, "ranking: {name: lifo}\n")
    assert res.exit_code == 0 and "ranking:" not in res.stdout and "policy.yaml" in res.stderr, res.output
