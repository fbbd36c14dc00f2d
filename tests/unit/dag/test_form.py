"""The width choice (one job holding the widest level vs split units): one rule for dag submit and the simulator."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.dag.form import choose_form, groups_of, one_job_shape
from slurm_plugin.dag.plan import plan_workflow
from slurm_plugin.dag.sim import build_jobs, machine_for
from slurm_plugin.dag.spec import parse_workflow
from slurm_plugin.dag.streams import Arrival
from slurm_plugin.sim.machine import homogeneous
from slurm_plugin.site import load_site

SHORT = {"name": "q", "tasks": [{"name": "a", "array": 20, "runtime_s": 2, "command": "echo a"},
                                {"name": "b", "array": 20, "runtime_s": 2, "after": ["a"], "command": "echo b"}]}
LONG = {"name": "r", "tasks": [{"name": "frames", "array": 64, "cores": 8, "runtime_s": 600,
                                "arch": ["x86_64", "aarch64"]}]}


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


def test_merges_short_wide_workflows_and_splits_long_ones(demo):
    m = homogeneous(25, 4)
    f = choose_form(parse_workflow(SHORT), m.groups, launch_s=1.0)
    # one job of 5 x 4 cores: 1 + 2 + 2 s; split: one chain unit, 3 task elements per element: 12 + 1 s
    assert f.merged and f.merged_s == pytest.approx(5.0) and f.split_s == pytest.approx(13.0)
    assert (f.group, f.nodes, f.cores) == ("nodes", 5, 4) and f.reason.startswith("merged:")
    f = choose_form(parse_workflow(LONG), groups_of(demo), launch_s=1.0)
    # 512 cores wanted; one job holds at most the 3 x 64 ARM cores: 1 + 64 x 600 x 8 / 192 s; split over the
    # site's 456 cores: two waves of 601 s
    assert not f.merged and f.merged_s == pytest.approx(1601.0) and f.split_s == pytest.approx(1202.0)
    assert (f.group, f.nodes) == ("cpu-arm", 3) and f.reason.startswith("split:")
    assert not choose_form(parse_workflow(SHORT), homogeneous(2, 1).groups[:0]).merged  # no group at all


def test_never_merges_accelerators_or_per_task_constraints():
    gpu = parse_workflow({"name": "g", "tasks": [{"name": "a", "array": 20, "runtime_s": 2},
                                                 {"name": "b", "runtime_s": 2, "after": ["a"], "gpu": {"count": 1}}]})
    f = choose_form(gpu, homogeneous(25, 4).groups)
    assert not f.merged and "task b needs an accelerator" in f.reason
    cons = parse_workflow({"name": "c", "tasks": [{"name": "a", "array": 20, "runtime_s": 2, "constraint": "x86_64"}]})
    assert "task a has its own --constraint" in choose_form(cons, homogeneous(25, 4).groups).reason


def test_site_groups_and_simulator_machine_give_the_same_choice(demo):
    for spec in (SHORT, LONG):
        w = parse_workflow(spec)
        assert choose_form(w, groups_of(demo)) == choose_form(w, machine_for(demo).groups)
    assert one_job_shape(parse_workflow(SHORT), groups_of(demo)) == one_job_shape(parse_workflow(SHORT),
                                                                                  machine_for(demo).groups)


def test_submit_plan_and_simulator_follow_the_rule(demo):
    import numpy as np

    for spec, merged in ((SHORT, True), (LONG, False)):
        w = parse_workflow(spec)
        p = plan_workflow(w, demo)
        assert p.form.merged is merged
        a = Arrival(w, 0.0, {t.name: np.full(t.array, t.runtime_s) for t in w.tasks})
        jobs, _, _ = build_jobs("rrg", [a], machine_for(demo), demo)
        assert (len(jobs) == 1) is merged  # one row for the one job; the split form has a row per element
        assert ([j.unit.name for j in p.jobs] == ["all"]) is merged


def test_merged_job_holds_whole_nodes_and_runs_levels_in_order(demo):
    p = plan_workflow(parse_workflow(SHORT), demo)
    [job] = p.jobs
    assert "--exclusive" in job.args and "--mem=0" in job.args and f"--nodes={p.form.nodes}" in job.args
    assert f"--cpus-per-task={p.form.cores}" in job.args and job.match.chosen.cls.pool == p.form.group
    s = job.script
    assert s.index("# level 0: a") < s.index("# level 1: b") and s.count("srun --exact") == 2
    assert "task_0() { # a\necho a\n}" in s and 'wait "$p" || fail=1' in s


def test_dry_run_prints_the_form_and_why_and_submits_nothing(tmp_path):
    for spec, word in ((SHORT, "merged"), (LONG, "split")):
        f = tmp_path / f"{spec['name']}.yaml"
        import yaml
        f.write_text(yaml.safe_dump(spec))
        # no Slurm on PATH's side is needed: a dry run never calls sbatch (SLURM_CONF points nowhere)
        res = CliRunner(env={"SLURM_CONF": str(tmp_path / "none.conf")}).invoke(
            main, ["dag", "submit", str(f), "--site", "demo", "--dry-run", "--state-dir", str(tmp_path / "s")])
        assert res.exit_code == 0, res.output
        assert f"form: {word}:" in res.output and "sbatch " in res.output
        assert not (tmp_path / "s").exists()
