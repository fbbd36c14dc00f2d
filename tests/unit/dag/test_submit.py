"""The pure parts of submission: SiteFactor levels in the owner's band, re-matching decisions, records."""

from __future__ import annotations

import pytest

from slurm_plugin.dag.plan import MAX_LEVEL, plan_workflow
from slurm_plugin.dag.spec import parse_workflow
from slurm_plugin.dag.submit import (DagRecord, UnitRecord, load, place_of, priority_actions, rematch_actions,
                                     replan, save)
from slurm_plugin.decision import Cause, MoveJob
from slurm_plugin.pack.classes import GroupState
from slurm_plugin.pack.model import Resources
from slurm_plugin.site import load_site
from slurm_plugin.site.priority import BAND_SPAN, LEVEL_STEP

WF = {"name": "render", "tasks": [
    {"name": "split", "runtime_s": 20},
    {"name": "frames", "after": ["split"], "array": 4, "cores": 8, "arch": ["x86_64", "aarch64"],
     "class": "video-render", "runtime_s": 60},
    {"name": "thumbs", "after": ["split"], "runtime_s": 5},
    {"name": "encode", "after": ["frames"], "cores": 4, "gpu": {"count": 1}, "runtime_s": 30},
    {"name": "merge", "after": ["encode", "thumbs"], "runtime_s": 5}]}  # split form: the encode needs a GPU


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


def record_for(plan, site="demo"):
    units = tuple(UnitRecord(j.unit.name, 100 + i, j.match.chosen.cls.partition, j.match.chosen.features, j.after,
                             j.level, j.unit.critical, j.unit.slack, j.unit.tasks, j.unit.width)
                  for i, j in enumerate(plan.jobs))
    return DagRecord("render.100", dict(WF), site, 10.0, 0.0, units)


def test_levels_stay_in_the_owners_band(demo):
    rec = record_for(plan_workflow(parse_workflow(WF), demo))
    frames, thumbs = rec.unit("frames"), rec.unit("thumbs")
    decision = priority_actions(rec, {frames.job_id: 510 * BAND_SPAN, thumbs.job_id: 510 * BAND_SPAN + 300})
    value = {j: a.site_factor for a in decision.actions for j in a.job_ids}
    assert value[frames.job_id] == 510 * BAND_SPAN + MAX_LEVEL * LEVEL_STEP  # top of its band, not above
    assert 510 * BAND_SPAN <= value[thumbs.job_id] < value[frames.job_id]
    assert value[rec.unit("split").job_id] == MAX_LEVEL * LEVEL_STEP  # sprio did not list it: band 0
    assert all(a.cause is Cause.GRAPH for a in decision.actions)


def test_rematch_moves_only_a_pending_unmoved_unit_off_a_full_class(demo):
    plan = plan_workflow(parse_workflow(WF), demo)
    rec = record_for(plan)
    frames = rec.unit("frames")
    assert frames.partition == "batch" and frames.features == "x86_64"
    full = {"cpu-x86": GroupState(free=Resources(0, 0, 0))}
    live = {frames.job_id: ("PENDING", "batch", "x86_64")}
    [move] = rematch_actions(rec, replan(rec, demo), demo, full, live).actions
    assert isinstance(move, MoveJob) and move.job_id == frames.job_id and move.features == "aarch64"
    assert move.partition in ("arm", "batch") and move.cause is Cause.GRAPH
    assert not rematch_actions(rec, plan, demo, {}, live).actions  # room where it is
    assert not rematch_actions(rec, plan, demo, full, {frames.job_id: ("RUNNING", "batch", "x86_64")}).actions
    assert not rematch_actions(rec, plan, demo, full, {frames.job_id: ("PENDING", "arm", "aarch64")}).actions
    from slurm_plugin.dag.submit import moved
    again = moved(rec, rematch_actions(rec, plan, demo, full, live), [type("R", (), {"ok": True})()])
    assert not rematch_actions(again, plan, demo, full, {frames.job_id: ("PENDING", "arm", "aarch64")}).actions


def test_record_round_trip_and_place_in_graph(demo, tmp_path):
    rec = record_for(plan_workflow(parse_workflow(WF), demo))
    save(rec, tmp_path)
    assert load("render.100", tmp_path) == rec
    place = place_of(rec.unit("frames").job_id, tmp_path)
    assert place["after"] == [["split", rec.unit("split").job_id]] and place["before"] == [["encode", rec.unit("encode").job_id]]
    assert place["critical"] and place_of(999, tmp_path) is None
    with pytest.raises(KeyError, match="render.100"):
        load("nope", tmp_path)


def test_dag_is_a_cycle_step():
    from slurm_plugin.cycle.steps import make_step
    from slurm_plugin.policy.spec import STEP_NAMES

    assert "dag" in STEP_NAMES and type(make_step("dag")).__name__ == "GraphStep"


def test_a_unit_that_is_no_array_writes_its_output_under_its_job_id(tmp_path):
    from slurm_plugin.dag.submit import output_arg

    assert output_arg(("--job-name=w.a", "--array=0-3"), tmp_path) == f"--output={tmp_path}/%x-%A_%a.out"
    assert output_arg(("--job-name=w.b", "--nodes=1"), tmp_path) == f"--output={tmp_path}/%x-%j.out"
