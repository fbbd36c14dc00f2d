"""The DQN fine-tuned on the site's history as a tuner candidate (issue 13, item 2).

Contract of :func:`finetuned_candidates`:

- **What is trained**: the shipped DQN, fine-tuned (:func:`slurm_plugin.training.finetune.fine_tune`, seed 1)
  on the jobs *before the first rolling origin* of the tuning part (:func:`.split.rolling_origins`), so it has
  seen no validation job and is judged on the validation blocks like a fixed ranking; the held-back part is
  never seen. That model is what would be deployed (it is not refitted on the whole tuning part: a refit
  would be a model the validation never judged).
- **Where it runs**: torch is not a dependency of the suite. When this Python has it, in a child process of
  it; else in the Python named by ``HETSCHED_TORCH_PYTHON`` (or ``python``), which re-reads the history and
  cuts the same jobs (``python -m slurm_plugin.training.finetune``, :func:`.split.before_first_origin`). Neither: no candidate, and the note says why.
- **Budget**: ``budget_s`` CPU seconds as ``fine_tune`` plans them (episodes by a fixed cost rule; also a
  wall-clock stop); the child reports the CPU seconds it used.
- **Output**: the model file ``workdir/dqn-finetuned.npz`` and two candidates (without and with the age
  floor), labelled ``dqn-finetuned``, plus a note (episodes, jobs, CPU s, validation bsld / SJF's before and
  after); or no candidate and a note naming the reason (failure: the child's last error line).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from ..policy import RankingSpec
from .candidates import Candidate

TORCH_PYTHON_ENV = "HETSCHED_TORCH_PYTHON"
MODEL_NAME = "dqn-finetuned.npz"
SEED = 1


def torch_python() -> str | None:
    """A Python with torch: ``$HETSCHED_TORCH_PYTHON``, else this one when it has torch, else None."""
    env = os.environ.get(TORCH_PYTHON_ENV)
    if env:
        return env
    return sys.executable if importlib.util.find_spec("torch") is not None else None


def finetuned_candidates(history: str, site: str | None, drop_unfit: bool, tune_fraction: float, budget_s: float,
                         workdir: Path, floor_hours: float = 24.0,
                         python: str | None = None) -> tuple[list[Candidate], str]:
    """Fine-tune in a child process; (candidates, note). See the module docstring."""
    if budget_s <= 0:
        return [], "fine-tuned DQN not run (--dqn-budget 0)"
    python = python or torch_python()
    if python is None:
        return [], (f"fine-tuned DQN skipped: torch is not installed for {sys.executable} (set {TORCH_PYTHON_ENV} "
                    "to a Python that has it)")
    out = Path(workdir) / MODEL_NAME
    cmd = [python, "-m", "slurm_plugin.training.finetune", history, "--out", str(out), "--budget", f"{budget_s:g}",
           "--tune-fraction", f"{tune_fraction:g}", *(["--site", site] if site else []),
           *(["--drop-unfit"] if drop_unfit else [])]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3 * budget_s + 600)
    except (OSError, subprocess.TimeoutExpired) as err:
        return [], f"fine-tuned DQN skipped: {python}: {err}"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return [], f"fine-tuned DQN skipped: fine-tuning with {python} failed (exit {proc.returncode}): {last}"
    meta = json.loads(proc.stdout.strip().splitlines()[-1])
    cands = [Candidate(RankingSpec(name="dqn", model=str(out), age_floor=f, age_floor_hours=floor_hours),
                       "finetuned") for f in (False, True)]
    note = (f"fine-tuned DQN: {meta['episodes_run']} of {meta['episodes_planned']} planned episodes on the "
            f"{meta['jobs']} jobs before the first validation block, budget {budget_s:g} s, {meta['cpu_s']:.0f} CPU s "
            f"({meta['wall_s']:.0f} s wall{', stopped early' if meta['stopped_early'] else ''}); its own "
            f"validation bsld / SJF's {meta['start_val_ratio']:.3f} (shipped) -> {meta['val_ratio']:.3f}")
    return cands, note
