"""Policy files: defaults, strict keys, clear errors; `sim run` and `cycle` read the same file."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cli.common import scale_config
from slurm_plugin.cycle.policy import cycle_config, live_ranker
from slurm_plugin.cycle.decide import CycleConfig
from slurm_plugin.policy import PolicyError, PolicySpec, RankingSpec, ScalingSpec, load_policy, policy_from_dict


def test_an_empty_file_is_the_default_policy_and_its_cycle_is_todays_default(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("# nothing set\n")
    assert load_policy(f) == PolicySpec()
    # pack, reshape and the planner as `hetsched cycle` runs them without options (scale_options' defaults)
    assert cycle_config(PolicySpec()) == CycleConfig(scale=scale_config(300.0, 1, 10000.0, True, False))


def test_yaml_and_json_name_the_same_policy(tmp_path):
    data = {"ranking": {"name": "dqn", "model": "m.npz", "age_floor_hours": 12},
            "packing": {"enabled": False}, "scaling": {"name": "idle-timer", "suspend_time_s": 900}, "reshape": False}
    (tmp_path / "p.json").write_text(json.dumps(data))
    (tmp_path / "p.yaml").write_text("ranking: {name: dqn, model: m.npz, age_floor_hours: 12}\npacking:\n"
                                     "  enabled: false\nscaling: {name: idle-timer, suspend_time_s: 900}\n"
                                     "reshape: false\n")
    spec = load_policy(tmp_path / "p.json")
    assert spec == load_policy(tmp_path / "p.yaml")
    # a relative model path is relative to the policy file
    assert spec.ranking == RankingSpec("dqn", str(tmp_path / "m.npz"), True, 12.0)
    assert spec.scaling.suspend_time_s == 900.0
    assert not cycle_config(spec).pack and not cycle_config(spec).reshape


@pytest.mark.parametrize("data,error", [
    ({"rankin": {}}, "p.yaml: rankin: unknown key (valid: ranking, packing, scaling, reshape, steps, twin, budget)"),
    ({"ranking": {"name": "lifo"}}, "p.yaml: ranking.name: unknown choice 'lifo' (valid: fcfs, sjf, wfp3, unicep, "
                                    "f1, multifactor, dqn, weighted)"),
    ({"ranking": {"floor": 1}}, "p.yaml: ranking.floor: unknown key (valid: name, model, age_floor, "
                                "age_floor_hours, w_estimate, w_size, w_age)"),
    ({"ranking": {"name": "sjf", "model": "m.npz"}}, "p.yaml: ranking.model: only the dqn ranking reads a model"),
    ({"scaling": {"wait_price_w": None, "warm_nodes": -1}}, "p.yaml: scaling.warm_nodes: must be >= 0 (got -1)"),
    ({"scaling": {"wait_price_w": "high"}}, "p.yaml: scaling.wait_price_w: must be a finite number"),
    ({"scaling": {"grace_s": float("nan")}}, "p.yaml: scaling.grace_s: must be a finite number"),
    ({"scaling": {"suspend_time_s": 60}}, "p.yaml: scaling.suspend_time_s: not read by scaling planner (only by "
                                          "idle-timer)"),
    ({"scaling": {"name": "planner", "warm_nodes": 2}}, "p.yaml: scaling.warm_nodes: not read by scaling planner "
                                                        "(only by the planner with wait_price_w: null)"),
    ({"scaling": {"name": "always-on", "pid": True}}, "p.yaml: scaling.pid: not read by scaling always-on"),
    ({"packing": {"enabled": "yes"}}, "p.yaml: packing.enabled: must be true or false (got 'yes')"),
    ({"packing": []}, "p.yaml: packing: expected a mapping, got list"),
    (["ranking"], "p.yaml: expected a mapping, got list"),
])
def test_bad_policies_name_the_file_and_field(data, error):
    with pytest.raises(PolicyError) as err:
        policy_from_dict(data, "p.yaml")
    assert str(err.value).startswith(error)


def test_a_yaml_syntax_error_names_the_line(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("ranking:\n  name: sjf\n scaling: [\n")
    with pytest.raises(PolicyError, match=r"p\.yaml:3: not YAML/JSON"):
        load_policy(f)


def test_optional_values_take_null_and_others_do_not():
    assert policy_from_dict({"scaling": {"wait_price_w": None}}).scaling == ScalingSpec(wait_price_w=None)
    with pytest.raises(PolicyError, match="scaling.name: must not be null"):
        policy_from_dict({"scaling": {"name": None}})


def test_sim_run_with_a_policy_file_is_sim_run_with_the_same_choices(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("ranking: {name: sjf, age_floor: false}\npacking: {enabled: false}\n"
                 "scaling: {name: idle-timer, suspend_time_s: 300}\n")
    common = ["sim", "run", "--site", "demo", "-w", "synthetic:jobs=300,seed=3,load=0.8", "--json"]
    by_file = CliRunner().invoke(main, [*common, "--policy-file", str(f)])
    by_options = CliRunner().invoke(main, [*common, "--policy", "sjf", "--power", "idle-suspend",
                                           "--suspend-time", "300"])
    assert by_file.exit_code == 0 and by_options.exit_code == 0, by_file.output + by_options.output
    a, b = json.loads(by_file.output), json.loads(by_options.output)
    assert a["metrics"] == b["metrics"] and a["policy"] == "sjf" and a["power"] == "idle-suspend"
    assert a["policy_spec"]["scaling"]["suspend_time_s"] == 300.0


@pytest.mark.parametrize("argv,error", [
    (["sim", "run", "-w", "synthetic:jobs=10", "--policy", "sjf"], "--policy-file replaces --policy"),
    (["cycle", "once", "--dry-run", "--site", "demo", "--no-pack"], "--policy-file replaces --no-pack"),
])
def test_a_policy_file_and_the_options_it_replaces_are_refused_together(tmp_path, argv, error):
    f = tmp_path / "p.yaml"
    f.write_text("{}\n")
    res = CliRunner().invoke(main, [*argv, "--policy-file", str(f)])
    assert res.exit_code == 2 and error in res.output, res.output


def test_cycle_refuses_a_bad_policy_file_before_touching_slurm(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("scaling: {name: sometimes}\n")
    res = CliRunner().invoke(main, ["cycle", "once", "--dry-run", "--site", "demo", "--policy-file", str(f)])
    assert res.exit_code == 2 and "scaling.name: unknown choice 'sometimes'" in res.output, res.output


def test_the_spec_sits_below_the_simulator_and_the_cycle():
    """policy/ imports nothing from sim/ or cycle/ (they build their hooks and steps from it)."""
    import ast
    from pathlib import Path

    import slurm_plugin.policy as pkg

    def absolute(node: ast.ImportFrom) -> list[str]:
        base = ["slurm_plugin", "policy"][: 2 - node.level + 1] if node.level else []
        module = ".".join(base + ([node.module] if node.module else []))
        return [module] if node.module else [f"{module}.{a.name}" for a in node.names]

    for path in Path(pkg.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = absolute(node) if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            bad = [n for n in names if n.startswith(("slurm_plugin.sim", "slurm_plugin.cycle"))]
            assert not bad, f"{path.name} imports {bad}"


# --- no file, empty file (one meaning) ---------------------------------------------------------------------------


def test_no_policy_file_and_an_empty_one_are_the_same_policy_slurms_priority_alone(tmp_path):
    """`hetsched cycle` without --policy-file runs the policy its default options name; an empty file is that
    policy too: Slurm's multifactor with no SiteFactor (no age floor), pack, reshape, the break-even planner."""
    from slurm_plugin.cli.cycle import _flags_policy

    f = tmp_path / "p.yaml"
    f.write_text("")
    no_file = _flags_policy(None, False, False, False, grace=300.0, warm=1, wait_price=10000.0, arch=True,
                            pid=False)
    assert load_policy(f) == no_file == PolicySpec()
    assert PolicySpec().ranking == RankingSpec("multifactor", age_floor=False)
    assert live_ranker(PolicySpec().ranking) is None  # no ranking at all: the rank step runs 'rank:off'
    # the floor stays on by default for the rankings that set SiteFactor, and can be asked for multifactor
    assert RankingSpec("sjf").age_floor and load_policy_text(tmp_path, "ranking: {name: dqn}\n").ranking.age_floor
    assert load_policy_text(tmp_path, "ranking: {age_floor: true}\n").ranking.age_floor


def load_policy_text(tmp_path, text: str) -> PolicySpec:
    f = tmp_path / "q.yaml"
    f.write_text(text)
    return load_policy(f)


# --- steps: the live cycle's order -------------------------------------------------------------------------------


def test_steps_set_the_cycle_order_and_default_to_todays(tmp_path):
    from slurm_plugin.cycle.policy import policy_steps

    # the wipe step (the power cycle after sensitive work) is not a policy choice: always first
    assert [s.name for s in policy_steps(PolicySpec())] == ["wipe", "rank", "pack", "reshape", "power"]
    spec = load_policy_text(tmp_path, "steps: [power, reshape, rank, pack]\n")
    assert [s.name for s in policy_steps(spec)] == ["wipe", "power", "reshape", "rank", "pack"]
    # a listed step its section switches off is skipped
    spec = load_policy_text(tmp_path, "steps: [rank, pack, power]\nreshape: false\npacking: {enabled: false}\n")
    assert [s.name for s in policy_steps(spec)] == ["wipe", "rank", "power"]


@pytest.mark.parametrize("text,error", [
    ("steps: [rank, pak]\n", "q.yaml: steps[1]: unknown step 'pak' (valid: rank, pack, reshape, power"),
    ("steps: [rank, rank]\n", "q.yaml: steps[1]: step 'rank' listed twice"),
    ("steps: rank\n", "q.yaml: steps: expected a non-empty list of step names"),
    ("steps: [rank, pack, reshape]\n", "q.yaml: steps: scaling planner runs the 'power' step, which is not listed"),
    ("steps: [pack, reshape, power]\nranking: {name: sjf}\n",
     "q.yaml: steps: ranking sjf with the age floor runs the 'rank' step, which is not listed"),
])
def test_bad_steps_are_refused_listing_the_valid_ones(tmp_path, text, error):
    with pytest.raises(PolicyError) as err:
        load_policy_text(tmp_path, text)
    assert str(err.value).startswith(f"{tmp_path / 'q.yaml'}: {error.removeprefix('q.yaml: ')}"), str(err.value)


def test_a_registered_step_may_be_named_in_a_policy_file(tmp_path):
    from dataclasses import dataclass

    from slurm_plugin.cycle.policy import policy_steps
    from slurm_plugin.cycle.steps import STEPS, register_step
    from slurm_plugin.decision import Decision
    from slurm_plugin.policy.spec import STEP_NAMES

    @dataclass(frozen=True)
    class Audit:
        name: str = "audit-test"

        def decide(self, inputs, memory):
            return Decision((), "audit-test"), memory

    register_step("audit-test", Audit)
    try:
        spec = load_policy_text(tmp_path, "steps: [rank, audit-test, pack, reshape, power]\n")
        assert [s.name for s in policy_steps(spec)] == ["wipe", "rank", "audit-test", "pack", "reshape", "power"]
    finally:
        STEPS.pop("audit-test")
        STEP_NAMES.remove("audit-test")


def test_the_guard_step_is_valid_whatever_was_imported(tmp_path):
    """A policy file naming the built-in ``guard`` step loads in a process that never imported the cycle (was:
    'unknown step' unless slurm_plugin.cycle had been imported first, as `hetsched policy check` did not)."""
    (tmp_path / "q.yaml").write_text("steps: [rank, pack, reshape, power, guard]\n")
    code = ("import sys; from slurm_plugin.policy.spec import load_policy; load_policy(sys.argv[1]); "
            "assert 'slurm_plugin.cycle' not in sys.modules, 'the check imported the cycle'")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "q.yaml")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
