"""Fine-tune the DQN ranking on one site's history (the tuner's "dqn fine-tuned" candidate; needs torch).

Contract of :func:`fine_tune`:

- **Input**: a start model (a path, or None for the shipped ``rank/models/dqn_default.npz``), the site's
  *tuning part* only (``tune.split.tune_part``; the held-back part must not be passed), the simulator's
  :class:`~slurm_plugin.sim.machine.Machine` of the site, a budget in seconds and a seed.
- **What it does**: Double DQN (:func:`.train.train`) starting from the start model's weights (no teacher warm
  start), on the first :data:`TRAIN_SHARE` of the jobs (random 256-job sequences, each from an empty machine,
  backfill on); every few episodes the greedy model is scored on fixed sequences from the rest of the jobs
  (bsld / SJF's), and the best *trained* checkpoint is returned (never the unchanged start model: whether
  fine-tuning helped is the tuner's call, on its held-back part). The start model's backlog gate is kept.
  Weights move once the episodes have yielded one batch of transitions (128 job-passes); a history so
  small or so idle that they never do comes back with the start weights (``meta["fine_tune"]``
  ``episodes_run`` still says what ran).
- **Budget**: the number of episodes is planned from ``budget_s`` by a fixed rule (:func:`planned_episodes`,
  sized for a loaded 2-core host), so the result depends only on the inputs and the seed: the same call
  gives the same weights. The budget is also a hard wall-clock stop: if the host is slower than planned,
  training stops early (after the episode running at ``budget_s``), and ``meta["stopped_early"]`` is true;
  only then may two calls differ. Set-up (SJF reference runs, loading) adds a few seconds beyond it.
- **Output**: a :class:`~slurm_plugin.rank.dqn.model.DqnModel` (numpy; ``save_model`` writes it,
  ``DqnRanking(model, machine.cores)`` runs it). Its ``meta["fine_tune"]`` holds the start model's path,
  the jobs, episodes (planned and run), seed, budget, wall time, and the validation bsld / SJF's of the
  start model and of the result (``start_val_ratio``, ``val_ratio``: < 1 is better than SJF).
- **Errors**: ModelError for an unreadable start model, ValueError for too few jobs (< :data:`MIN_JOBS`) or a
  non-positive budget, ImportError when torch is absent.

Example (what the tuner does)::

    split = split_history(jobs)
    model = fine_tune(None, tune_part(jobs, split), machine, budget_s=120, seed=1)
    save_model(model, workdir / "dqn-finetuned.npz")

As a process (the tuner runs it in a Python that has torch, :mod:`slurm_plugin.tune.finetuned`):
``python -m slurm_plugin.training.finetune HISTORY --out M.npz --budget S [--site S] [--drop-unfit]``
fine-tunes on the jobs before the history's first rolling origin (``tune.split.before_first_origin``) and
prints ``meta["fine_tune"]`` plus ``cpu_s`` as one JSON line.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from ..rank.dqn.model import DEFAULT_MODEL, DqnModel, load_model
from ..sim.machine import Machine
from ..workload.jobs import JobTable
from .episodes import Source
from .train import TrainConfig, train

TRAIN_SHARE = 0.8  # train on the first 80 % of the tuning part, choose the checkpoint on the last 20 %
MIN_JOBS = 20
EPISODE_S = 1.5  # planned cost of one 256-job episode with its updates on a loaded 2-core host (measured ~0.6 s)
EVAL_S = 4.0  # planned cost of one validation (VAL_SEQS sequences of the DQN)
VAL_SEQS = 4
FINE_TUNE = TrainConfig(episodes=1, seq_len=256, lr=1e-4, batch=128, updates=20, eval_every=5, val_seqs=VAL_SEQS,
                        eps_start=0.1, eps_end=0.02, warm_episodes=0, keep_start=False,
                        train_part=(0.0, TRAIN_SHARE), val_part=(TRAIN_SHARE, 1.0))


def planned_episodes(budget_s: float, seq_len: int, cfg: TrainConfig = FINE_TUNE) -> int:
    """Episodes that fit ``budget_s`` by the fixed cost rule (episodes and validations scaled by the sequence
    length): at least 1. Example: 120 s of 256-job sequences -> 50 episodes."""
    scale = seq_len / 256.0
    per = EPISODE_S * scale + EVAL_S * scale / cfg.eval_every
    return max(1, int((budget_s - EVAL_S * scale) / per))


def fine_tune(model_path: str | Path | None, jobs: JobTable, machine: Machine, budget_s: float,
              seed: int = 1) -> DqnModel:
    """The start model fine-tuned on ``jobs`` (the site's tuning part) within ``budget_s``; see the module
    docstring for the full contract."""
    if budget_s <= 0:
        raise ValueError(f"fine-tune budget must be > 0 s (got {budget_s:g})")
    if len(jobs) < MIN_JOBS:
        raise ValueError(f"fine-tuning needs at least {MIN_JOBS} jobs (got {len(jobs)})")
    t0 = time.monotonic()
    path = Path(model_path) if model_path else Path(DEFAULT_MODEL)
    start = load_model(path)
    seq_len = int(min(FINE_TUNE.seq_len, max(8, int(len(jobs) * (1 - TRAIN_SHARE)))))
    episodes = planned_episodes(budget_s, seq_len)
    hidden = tuple(int(w.shape[1]) for w in start.weights[:-1])
    cfg = replace(FINE_TUNE, episodes=episodes, seq_len=seq_len, seed=seed, hidden=hidden,
                  backlog_gate=start.meta.get("backlog_gate"),
                  teacher_low=1.0 if start.meta.get("gate_constrained") else 0.0)  # keeps gate_constrained
    model, out = train([Source("site", machine, jobs)], cfg, start=start, deadline=t0 + budget_s)
    start_ratio = next(h["val_bsld_over_sjf"] for h in out["history"] if h["episode"] == 0)
    ran = out["history"][-1]["episode"]
    model.meta = {k: v for k, v in model.meta.items() if k not in ("history", "sources", "val_sources")}
    model.meta.update({k: start.meta[k] for k in ("backlog_gate", "gate_constrained", "margin") if k in start.meta})
    model.meta["fine_tune"] = {"start_model": str(path), "jobs": len(jobs), "episodes_planned": episodes,
                               "episodes_run": ran, "seed": seed, "budget_s": budget_s,
                               "wall_s": round(time.monotonic() - t0, 3), "start_val_ratio": start_ratio,
                               "val_ratio": model.meta["val_bsld_over_sjf"],
                               "stopped_early": bool(model.meta.get("stopped_early"))}
    return model


def main(argv: list[str] | None = None) -> int:
    """The tuner's child process (module docstring)."""
    import argparse
    import json

    from ..rank.dqn.model import save_model
    from ..sim.run import prepare
    from ..tune.split import before_first_origin

    a = argparse.ArgumentParser(prog="python -m slurm_plugin.training.finetune")
    a.add_argument("history")
    a.add_argument("--out", required=True)
    a.add_argument("--budget", type=float, required=True)
    a.add_argument("--tune-fraction", type=float, default=0.7)
    a.add_argument("--site", default=None)
    a.add_argument("--drop-unfit", action="store_true")
    a.add_argument("--seed", type=int, default=1)
    args = a.parse_args(argv)
    t0 = time.process_time()
    p = prepare(args.history, args.site, drop_unfit=args.drop_unfit)
    model = fine_tune(None, before_first_origin(p.workload.jobs, args.tune_fraction), p.machine, args.budget,
                      args.seed)
    save_model(model, args.out)
    print(json.dumps({**model.meta["fine_tune"], "cpu_s": time.process_time() - t0}))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
