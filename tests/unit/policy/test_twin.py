"""The policy file's `twin:` section: the contract `hetsched tune` writes and the live guard reads."""

from __future__ import annotations

import datetime as dt

import pytest

from slurm_plugin.policy import PolicyError, PolicySpec, TwinMetrics, load_policy, policy_from_dict
from slurm_plugin.policy.twin import TwinHistory, TwinRunnerUp, TwinSection

FULL = """\
ranking: {name: sjf}
twin:
  generated_at: "2026-12-01T10:00:00Z"
  history: {path: /data/history.csv, sha256: "ab12", jobs: 12345, start: 1700000000, end: 1702592000}
  objective: avg_bsld
  predicted: {avg_bsld: 3.2, avg_wait_s: 410.0, max_wait_s: 86000.0, energy_kwh: 1234.0}
  runner_up: {ranking: sjf, backfill: true, predicted: {avg_bsld: 3.4, avg_wait_s: 450.0}}
  previous: policy.d/policy-20261130T100000Z.yaml
  why: "objective 3.2; the best objective"
"""


def test_the_full_section_as_tune_writes_it(tmp_path):
    f = tmp_path / "policy.yaml"
    f.write_text(FULL)
    twin = load_policy(f).twin
    assert twin == TwinSection(
        "avg_bsld", TwinMetrics(3.2, 410.0, 86000.0, 1234.0), "2026-12-01T10:00:00Z",
        TwinHistory("/data/history.csv", "ab12", 12345, 1700000000.0, 1702592000.0),
        TwinRunnerUp("sjf", True, TwinMetrics(avg_bsld=3.4, avg_wait_s=450.0)),
        str(tmp_path / "policy.d/policy-20261130T100000Z.yaml"),  # relative: to the policy file's directory
        why="objective 3.2; the best objective")
    assert twin.predicted_value() == 3.2


def test_no_section_and_null_are_no_twin():
    assert PolicySpec().twin is None
    assert policy_from_dict({"twin": None}).twin is None


def test_only_objective_and_predicted_are_required_and_an_unquoted_yaml_time_is_accepted(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("twin:\n  objective: avg_wait_s\n  predicted: {avg_wait_s: 60}\n"
                 "  generated_at: 2026-12-01T10:00:00Z\n  previous: null\n")
    twin = load_policy(f).twin
    assert (twin.objective, twin.predicted_value(), twin.generated_at, twin.previous) == \
        ("avg_wait_s", 60.0, "2026-12-01T10:00:00Z", None)
    assert policy_from_dict({"twin": {"objective": "avg_bsld", "predicted": {"avg_bsld": 2},
                                      "generated_at": dt.datetime(2026, 12, 1, 10, tzinfo=dt.timezone.utc)}}
                            ).twin.generated_at == "2026-12-01T10:00:00Z"


OK = {"objective": "avg_bsld", "predicted": {"avg_bsld": 3.2}}


@pytest.mark.parametrize("twin,error", [
    ({"objectiv": "avg_bsld"}, "p.yaml: twin.objectiv: unknown key (valid: objective, predicted, generated_at, "
                               "history, runner_up, previous, fidelity, packing, why)"),
    ({"predicted": {"avg_bsld": 1}}, "p.yaml: twin.objective: required"),
    ({"objective": "avg_bsld"}, "p.yaml: twin.predicted: required"),
    ({"objective": "makespan", "predicted": {}}, "p.yaml: twin.objective: unknown choice 'makespan' (valid: "
                                                 "avg_bsld, avg_wait_s)"),
    ({"objective": "avg_bsld", "predicted": {"avg_wait_s": 3}}, "p.yaml: twin.predicted.avg_bsld: required: it is "
                                                                "the objective"),
    ({**OK, "predicted": {"avg_bsld": 3, "bsld": 1}}, "p.yaml: twin.predicted.bsld: unknown key (valid: avg_bsld, "
                                                      "avg_wait_s, max_wait_s, energy_kwh)"),
    ({**OK, "predicted": {"avg_bsld": -1}}, "p.yaml: twin.predicted.avg_bsld: must be >= 0 (got -1)"),
    ({**OK, "predicted": {"avg_bsld": "low"}}, "p.yaml: twin.predicted.avg_bsld: must be a finite number"),
    ({**OK, "predicted": {"avg_bsld": float("inf")}}, "p.yaml: twin.predicted.avg_bsld: must be a finite number"),
    ({**OK, "predicted": [3.2]}, "p.yaml: twin.predicted: expected a mapping, got list"),
    ({**OK, "generated_at": "yesterday"}, "p.yaml: twin.generated_at: not an ISO-8601 time"),
    ({**OK, "generated_at": "2026-12-01T10:00:00+01:00"}, "p.yaml: twin.generated_at: must be UTC"),
    ({**OK, "generated_at": "2026-12-01T10:00:00"}, "p.yaml: twin.generated_at: must be UTC"),
    ({**OK, "history": {"jobs": -3}}, "p.yaml: twin.history.jobs: must be a count >= 0 (got -3)"),
    ({**OK, "history": {"jobs": 1.5}}, "p.yaml: twin.history.jobs: must be a count"),
    ({**OK, "history": {"start": 10, "end": 5}}, "p.yaml: twin.history.end: before start"),
    ({**OK, "history": {"file": "h"}}, "p.yaml: twin.history.file: unknown key (valid: path, sha256, jobs, "
                                       "start, end)"),
    ({**OK, "runner_up": {"ranking": ""}}, "p.yaml: twin.runner_up.ranking: must be text"),
    ({**OK, "runner_up": {"backfill": "yes"}}, "p.yaml: twin.runner_up.backfill: must be true or false"),
    ({**OK, "runner_up": {"predicted": {"avg_bsld": None, "x": 1}}}, "p.yaml: twin.runner_up.predicted.x: "
                                                                      "unknown key"),
    ({**OK, "previous": 3}, "p.yaml: twin.previous: must be text (got 3)"),
    ({**OK, "why": ["best"]}, "p.yaml: twin.why: must be text (got ['best'])"),
    ("avg_bsld", "p.yaml: twin: expected a mapping, got str"),
])
def test_bad_twin_sections_name_the_file_and_field(twin, error):
    with pytest.raises(PolicyError) as err:
        policy_from_dict({"twin": twin}, "p.yaml")
    assert str(err.value).startswith(error)


def test_fidelity_section_round_trips_and_names_bad_fields(tmp_path):
    from slurm_plugin.policy import PolicyError, load_policy

    base = "twin:\n  objective: avg_bsld\n  predicted: {avg_bsld: 2.0}\n  fidelity: "
    p = tmp_path / "p.yaml"
    p.write_text(base + "{checked: true, passed: false, forced: true, kendall_tau: -0.2, jobs: 10, min_tau: 0.9}\n")
    f = load_policy(p).twin.fidelity
    assert f.checked and not f.passed and f.forced and f.kendall_tau == -0.2 and f.jobs == 10
    p.write_text(base + "{passed: yes-ish}\n")
    with pytest.raises(PolicyError, match="twin.fidelity.passed: must be true or false"):
        load_policy(p)
    p.write_text(base + "{tau: 1}\n")
    with pytest.raises(PolicyError, match="twin.fidelity.tau: unknown key"):
        load_policy(p)
