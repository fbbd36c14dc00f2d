"""The DQN fine-tuned on the history as a tuner candidate: skipped with the reason when no Python has torch;
with one (``HETSCHED_TORCH_PYTHON``, or the repository's ``.venv``), fine-tuned on the jobs before the first
validation block only and replayed like any candidate."""

import os
from pathlib import Path

import numpy as np
import pytest

from slurm_plugin.sim.run import prepare
from slurm_plugin.tune.finetuned import TORCH_PYTHON_ENV, finetuned_candidates, torch_python
from slurm_plugin.tune.split import before_first_origin, rolling_origins, split_history, tune_part
from slurm_plugin.tune.sweep import Twin, replay

REPO = Path(__file__).resolve().parents[3]


def _torch() -> str | None:
    for cand in (torch_python(), str(REPO / ".venv/bin/python"), "/work/main/.venv/bin/python"):
        if cand and Path(cand).exists() and os.access(cand, os.X_OK):
            import subprocess

            if subprocess.run([cand, "-c", "import torch"], capture_output=True).returncode == 0:
                return cand
    return None


def test_without_torch_it_is_skipped_with_the_reason(swf, tmp_path, monkeypatch):
    """Run in every environment: where this Python has torch, its import spec is hidden (the test used to skip
    there, i.e. in CI's venv)."""
    import importlib.util

    monkeypatch.delenv(TORCH_PYTHON_ENV, raising=False)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else find_spec(name, *a))
    assert torch_python() is None
    cands, note = finetuned_candidates(str(swf), None, False, 0.7, 30, tmp_path)
    assert cands == [] and "torch is not installed" in note and TORCH_PYTHON_ENV in note
    assert finetuned_candidates(str(swf), None, False, 0.7, 0, tmp_path) == ([], "fine-tuned DQN not run (--dqn-budget 0)")


def test_it_sees_only_the_jobs_before_the_first_validation_block(swf):
    jobs = prepare(str(swf)).workload.jobs
    tj = tune_part(jobs, split_history(jobs))
    seen = before_first_origin(jobs)
    assert len(seen) == rolling_origins(tj)[0] < len(tj) and seen.submit.max() < tj.submit[len(seen)]


def test_fine_tuned_candidate_is_replayed_and_judged(swf, tmp_path):
    python = _torch()
    if python is None:
        pytest.skip("no Python with torch here ($HETSCHED_TORCH_PYTHON, .venv): the fine-tuned DQN is skipped")
    cands, note = finetuned_candidates(str(swf), None, False, 0.7, 3, tmp_path, python=python)
    assert [c.label for c in cands] == ["dqn-finetuned", "dqn-finetuned+floor"], note
    assert (tmp_path / "dqn-finetuned.npz").is_file() and "episodes on the 42 jobs" in note
    twin = Twin.of(prepare(str(swf)), "avg_bsld")
    tune, whole = replay(twin, [(cands[1], True, "tune"), (cands[1], True, "whole")], jobs=1)
    assert [tune[f"val{k}"].jobs for k in range(twin.folds)] == list(np.diff(twin.origins))
    assert whole["test"].jobs == twin.split.test_jobs and whole["test"].unstarted == 0
