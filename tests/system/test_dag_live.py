"""Workflows on the real cluster, in both forms the width rule chooses (the rule the simulator's rrg uses).

Split: a render pipeline (split, N frames portable across x86/ARM, a GPU encode, a merge) as job arrays with
--dependency=afterok on the node classes they were matched to; the frames unit, whose class (x86) is full
before it starts, moves to ARM; critical units get the top level of their band; ``why`` shows a unit's place
in its graph; ``dag status`` and ``dag cancel``. Merged: a short CPU sweep as one job holding whole nodes, its
levels in order as job steps; a failing element fails the job."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.decision import Journal

pytestmark = pytest.mark.system

WORKFLOW = """\
name: render
tasks:
  - name: split
    runtime_s: 5
    command: "echo $(date +%s.%N) $SLURMD_NODENAME > {out}/split"
  - name: frames
    after: [split]
    array: 4
    cores: 8
    arch: [x86_64, aarch64]
    class: video-render
    runtime_s: 60
    command: "echo $(date +%s.%N) $SLURMD_NODENAME > {out}/frame.$HETSCHED_TASK_INDEX"
  - name: thumbs
    after: [split]
    runtime_s: 5
    command: "echo $(date +%s.%N) $SLURMD_NODENAME > {out}/thumbs"
  - name: encode
    after: [frames]
    cores: 4
    gpu: {{count: 1, types: [a100, h100]}}
    runtime_s: 30
    command: "echo $(date +%s.%N) $SLURMD_NODENAME > {out}/encode"
  - name: merge
    after: [encode, thumbs]
    runtime_s: 5
    command: "echo $(date +%s.%N) $SLURMD_NODENAME > {out}/merge"
"""


SWEEP = """\
name: {name}
tasks:
  - name: prep
    runtime_s: 2
    command: "echo $(date +%s.%N) $SLURMD_NODENAME $SLURM_STEP_ID > {out}/prep"
  - name: points
    after: [prep]
    array: 6
    runtime_s: 2
    command: "echo $(date +%s.%N) $SLURMD_NODENAME $SLURM_STEP_ID > {out}/point.$HETSCHED_TASK_INDEX; {fail}"
  - name: reduce
    after: [points]
    runtime_s: 2
    command: "echo $(date +%s.%N) $SLURMD_NODENAME $SLURM_STEP_ID > {out}/reduce"
"""


def run(cluster, state, *args):
    env = {"SLURM_CONF": str(cluster.conf), "HETSCHED_DAG_STATE": str(state), "HETSCHED_JOURNAL": str(state / "j")}
    res = CliRunner(env=env).invoke(main, list(args))
    assert res.exit_code == 0, res.output
    return res


def test_render_pipeline_runs_as_dependent_arrays_and_frames_move_off_full_x86(cluster, slurm, tmp_path):
    out, state = tmp_path / "out", tmp_path / "state"
    out.mkdir()
    state.mkdir()
    wf = tmp_path / "render.yaml"
    wf.write_text(WORKFLOW.format(out=out))
    site = cluster.state()["site_path"]
    # x86 is full: both x86 nodes run a long job, so the frames (matched to x86, fastest for video-render)
    # cannot start there, whenever split ends
    dry = run(cluster, state, "dag", "submit", str(wf), "--site", site, "--dry-run")
    assert "form: split: task encode needs an accelerator" in dry.output and dry.output.count("sbatch ") == 5
    assert not state.joinpath("j").exists() and not list(state.glob("*.json"))  # nothing submitted
    fill = slurm.sbatch("-p", "x86", "-N", "2", "--exclusive", "--time=5", "--output=/dev/null", wrap="sleep 300")
    slurm.wait_job(fill, until=("RUNNING",), timeout=60)
    record = None
    try:
        res = run(cluster, state, "dag", "submit", str(wf), "--site", site, "--output-dir", str(tmp_path), "--json")
        record = json.loads(res.stdout)
        units = {u["unit"]: u for u in record["units"]}
        assert set(units) == {"split", "frames", "thumbs", "encode", "merge"}
        frames = units["frames"]
        assert frames["partition"] in ("batch", "x86", "render") and frames["features"] == "x86_64"
        assert frames["critical"] and not units["thumbs"]["critical"]
        rec = slurm.show_job(frames["job_id"])
        assert rec["JobState"] == "PENDING" and "afterok:" + str(units["split"]["job_id"]) in rec["Dependency"]
        # critical units get the top level of their band (sprio lists a job once its dependencies are met), the
        # one with slack a lower one (as the journal of the applier says: it may have run already)
        slurm.wait_job(units["split"]["job_id"], timeout=60)
        deadline = time.monotonic() + 60
        while not (sf := slurm.site_factors(frames["job_id"])) and time.monotonic() < deadline:
            time.sleep(0.5)  # slurmctld clears the dependency at its next scheduling pass
        assert sf == {frames["job_id"]: 3900}
        [entry] = Journal(state / "j").about_job(units["thumbs"]["job_id"])
        assert entry["cause"] == "GRAPH" and "level " in entry["reason"] and entry["site_factor"] < 3900, entry
        moved = run(cluster, state, "dag", "rematch", record["dag_id"])
        assert f"job {frames['job_id']} -> partition=arm features=aarch64" in moved.output \
            or f"job {frames['job_id']} -> partition=batch features=aarch64" in moved.output, moved.output
        rec = slurm.show_job(frames["job_id"])
        assert rec["Features"] == "aarch64"  # (it may already run there)
        assert run(cluster, state, "dag", "rematch", record["dag_id"]).output == ""  # moved once, stays
        why = run(cluster, state, "why", "job", str(frames["job_id"]), "--journal", str(state / "j"))
        assert f"unit frames" in why.output and f"waits for split (job {units['split']['job_id']})" in why.output
        assert "encode (job" in why.output and "critical path" in why.output
        done = slurm.wait_job(units["merge"]["job_id"], timeout=240)
        assert done["JobState"] == "COMPLETED", done
        outs = {p.name for p in tmp_path.glob("*.out")}  # a unit that is no array is named by its job id
        assert f"render.split-{units['split']['job_id']}.out" in outs and not [n for n in outs if "4294967294" in n]
        assert f"render.frames-{frames['job_id']}_0.out" in outs, outs
        stamp = {p.name: (float(p.read_text().split()[0]), p.read_text().split()[1]) for p in out.iterdir()}
        assert len([k for k in stamp if k.startswith("frame.")]) == 4
        assert {n for k, (_, n) in stamp.items() if k.startswith("frame.")} <= {"armn1", "armn2", "armn3"}
        assert stamp["encode"][1] in ("a100n1", "gh200n1")
        assert stamp["split"][1] == "rvn1"
        assert max(t for k, (t, _) in stamp.items() if k.startswith("frame.")) < stamp["encode"][0] < stamp["merge"][0]
        assert stamp["split"][0] < min(t for k, (t, _) in stamp.items() if k.startswith("frame."))
        st = json.loads(run(cluster, state, "dag", "status", record["dag_id"], "--json").stdout)
        assert {u["unit"]: u["state"] for u in st[0]["units"]}["merge"] == "COMPLETED"
    finally:
        slurm.cancel(fill)
        if record:
            run(cluster, state, "dag", "cancel", record["dag_id"])


def test_cancel_stops_every_unit(cluster, slurm, tmp_path):
    state = tmp_path / "state"
    wf = tmp_path / "w.yaml"
    wf.write_text("name: w\ntasks:\n  - {name: a, command: 'sleep 60', runtime_s: 60}\n"
                  "  - {name: b, after: [a], array: 3, command: 'true'}\n")
    rec = json.loads(run(cluster, state, "dag", "submit", str(wf), "--site", cluster.state()["site_path"],
                         "--output-dir", str(tmp_path), "--json").stdout)
    ids = [u["job_id"] for u in rec["units"]]
    run(cluster, state, "dag", "cancel", rec["dag_id"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        states = {slurm.show_job(j).get("JobState") for j in ids}
        if states <= {"CANCELLED"}:
            break
        time.sleep(0.5)
    assert states <= {"CANCELLED"}, states


def _sweep(tmp_path, name, fail="true"):
    out = tmp_path / name
    out.mkdir()
    wf = tmp_path / f"{name}.yaml"
    wf.write_text(SWEEP.format(name=name, out=out, fail=fail))
    return wf, out


def test_short_sweep_runs_as_one_job_holding_whole_nodes_with_its_levels_in_order(cluster, slurm, tmp_path):
    state = tmp_path / "state"
    wf, out = _sweep(tmp_path, "sweep")
    site = cluster.state()["site_path"]
    dry = run(cluster, state, "dag", "submit", str(wf), "--site", site, "--dry-run")
    assert "form: merged: one job of 1 x 64 cores on cpu-arm" in dry.output and dry.output.count("sbatch ") == 1
    rec = json.loads(run(cluster, state, "dag", "submit", str(wf), "--site", site, "--output-dir", str(tmp_path),
                         "--json").stdout)
    [unit] = rec["units"]
    assert unit["unit"] == "all" and unit["features"] == "aarch64" and unit["tasks"] == ["prep", "points", "reduce"]
    done = slurm.wait_job(unit["job_id"], timeout=180)
    assert done["JobState"] == "COMPLETED", (done.get("ExitCode"), done.get("Reason"), sorted(p.name for p in out.iterdir()), [p.read_text() for p in tmp_path.glob("*.out")], done.get("StdOut"))
    stamp = {p.name: p.read_text().split() for p in out.iterdir()}
    assert sorted(stamp) == ["point.0", "point.1", "point.2", "point.3", "point.4", "point.5", "prep", "reduce"]
    assert len({node for _, node, _ in stamp.values()}) == 1 and stamp["prep"][1].startswith("armn")
    assert len({step for _, _, step in stamp.values()}) == 8  # every element its own job step
    points = [float(v[0]) for k, v in stamp.items() if k.startswith("point.")]
    assert float(stamp["prep"][0]) < min(points) and max(points) < float(stamp["reduce"][0])


def test_a_failing_element_fails_the_merged_job_before_the_next_level(cluster, slurm, tmp_path):
    state = tmp_path / "state"
    wf, out = _sweep(tmp_path, "bad", fail="test $HETSCHED_TASK_INDEX != 3")
    rec = json.loads(run(cluster, state, "dag", "submit", str(wf), "--site", cluster.state()["site_path"],
                         "--output-dir", str(tmp_path), "--json").stdout)
    done = slurm.wait_job(rec["units"][0]["job_id"], timeout=180)
    assert done["JobState"] == "FAILED", done
    assert (out / "point.5").exists() and not (out / "reduce").exists()


def test_a_gpu_unit_starts_on_whichever_gpu_class_frees_first(cluster, slurm, tmp_path):
    """Late binding: the encode runs as fast on either GPU type, so it is sent to both (an OR of the classes'
    features); with the A100 node busy it starts on the H100 node, with no re-matching asked."""
    state, out = tmp_path / "state", tmp_path / "out"
    out.mkdir()
    wf = tmp_path / "enc.yaml"
    wf.write_text("name: enc\ntasks:\n  - name: encode\n    cores: 4\n    gpu: {count: 1}\n    runtime_s: 30\n"
                  f"    command: \"echo $SLURMD_NODENAME > {out}/encode\"\n")
    fill = slurm.sbatch("-p", "gpu", "-w", "a100n1", "--exclusive", "--time=5", "--output=/dev/null",
                        wrap="sleep 300")
    rec = None
    try:
        slurm.wait_job(fill, until=("RUNNING",), timeout=120)
        rec = json.loads(run(cluster, state, "dag", "submit", str(wf), "--site", cluster.state()["site_path"],
                             "--output-dir", str(tmp_path), "--json").stdout)
        [unit] = rec["units"]
        assert unit["features"] == "(x86_64&a100)|(aarch64&h100)" and unit["partition"] == "gpu"
        done = slurm.wait_job(unit["job_id"], timeout=120)
        assert done["JobState"] == "COMPLETED", done
        assert (out / "encode").read_text().strip() == "gh200n1"
    finally:
        slurm.cancel(fill)
        if rec:
            run(cluster, state, "dag", "cancel", rec["dag_id"])
