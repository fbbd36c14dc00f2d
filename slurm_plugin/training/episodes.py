"""Training/evaluation data for the DQN: job sequences cut from workloads, and simulated episodes turned
into per-job transitions (numpy only; the learner lives in :mod:`.train`).

Splits: each workload's jobs (in submit order) are cut into train (first 60 %), validation (next 10 %) and
test (last 30 %); sequences (default 256 jobs, RLScheduler's protocol) are drawn inside one split only, each
simulated from an empty cluster, so test figures come from jobs the model never saw.

Reward (per pending job, between two consecutive scheduling passes t -> t' of the simulator):

    r = -clip((t' - t) / 3600 x (3600 / max(run, 10) + price x (7 - band) x n / C) / 10, 0, 10)

The first term is the job's bounded-slowdown increment (waiting 1 h adds 3600 / max(run, 10 s) to its
bounded slowdown); the second is a price for holding a high band while waiting, per band level per hour and
in proportion to the job's share n / C of the machine's cores (the cores a job holds are what it keeps from
the others), so a job only claims priority when its slowdown gains more than it costs the others. A transition is
terminal when the job starts. The discounted sum is a job's (priced) bounded slowdown, the metric evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..rank.dqn.features import N_FEATURES
from ..rank.dqn.model import N_BANDS, DqnModel
from ..rank.dqn.policy import band_scores, view_features
from ..rank.heuristics import QueueView
from ..sim.engine import Engine
from ..sim.machine import Machine
from ..workload.jobs import JobTable

SPLITS = {"train": (0.0, 0.6), "val": (0.6, 0.7), "test": (0.7, 1.0)}
TAG = 1e-6  # job index stamped into the submit time's fraction (training only; submits are whole seconds)


@dataclass
class Source:
    """A workload fitted to its machine; ``jobs`` is the whole table (cut by :func:`split`)."""

    name: str
    machine: Machine
    jobs: JobTable


def split(jobs: JobTable, part: str | tuple[float, float]) -> JobTable:
    """The jobs of split ``part`` (a name in :data:`SPLITS` or a (lo, hi) pair of fractions), in submit order."""
    lo, hi = SPLITS[part] if isinstance(part, str) else part
    n = len(jobs)
    return jobs.take(np.arange(int(lo * n), int(hi * n)))


def sequences(jobs: JobTable, count: int, length: int, rng: np.random.Generator) -> list[JobTable]:
    """``count`` runs of ``length`` consecutive jobs (start uniform), submits rebased to 0 and whole seconds."""
    out = []
    length = min(length, len(jobs))
    for _ in range(count):
        start = int(rng.integers(0, len(jobs) - length + 1))
        sub = jobs.take(np.arange(start, start + length))
        sub.submit = np.round(sub.submit - sub.submit[0])
        out.append(sub)
    return out


@dataclass
class Recorder:
    """A RankingPolicy that plays epsilon-greedy bands (as :func:`.policy.band_scores`) and logs every
    scheduling pass (training only)."""

    model: DqnModel
    total_cores: float
    epsilon: float
    rng: np.random.Generator
    max_qos: float | None = None
    name: str = "dqn-explore"
    static: bool = False
    needs_able: bool = True
    log: list = field(default_factory=list)

    def scores(self, view: QueueView) -> np.ndarray:
        x = view_features(view, self.total_cores, self.max_qos)
        a = self.model.bands(x)
        explore = self.rng.random(len(a)) < self.epsilon
        a[explore] = self.rng.integers(0, N_BANDS, int(explore.sum()))
        idx = np.rint((view.submit - np.floor(view.submit)) / TAG).astype(np.int64)
        self.log.append((float(view.now), idx, x, a))
        return band_scores(view.limit, a)


def play(machine: Machine, seq: JobTable, rec: Recorder, backfill: bool = True):
    """Simulate ``seq`` with ``rec`` (submits tagged with job indices); returns the engine's outcome."""
    tagged = seq.take(np.arange(len(seq)))
    tagged.submit = seq.submit + np.arange(len(seq)) * TAG
    rec.log.clear()
    return Engine(machine, tagged, rec, backfill=backfill).run()


def transitions(rec: Recorder, run: np.ndarray, share: np.ndarray, price: float) -> tuple[np.ndarray, ...]:
    """(s, a, r, s', done) arrays from one episode's pass log; ``run`` and ``share`` (n / C) per job of the
    sequence (see the module docstring for r)."""
    s, a, r, s2, done = [], [], [], [], []
    log = rec.log
    for k, (t, idx, x, act) in enumerate(log):
        if k + 1 < len(log):
            t2, idx2, x2, _ = log[k + 1]
            pos = {int(j): p for p, j in enumerate(idx2)}
            nxt = np.array([pos.get(int(j), -1) for j in idx])
        else:
            t2, x2, nxt = t, x, np.full(len(idx), -1)
        ended = nxt < 0  # started at this pass (or the episode ran out of passes)
        dt = 0.0 if ended.all() else (t2 - t) / 3600.0
        held = price * (N_BANDS - 1 - act) * share[idx]
        cost = np.where(ended, 0.0, dt * (3600.0 / np.maximum(run[idx], 10.0) + held))
        s.append(x)
        a.append(act)
        r.append(-np.clip(cost / 10.0, 0.0, 10.0))
        s2.append(np.where(ended[:, None], x, x2[np.maximum(nxt, 0)]))
        done.append(ended.astype(np.float32))
    if not s:
        e = np.empty((0, N_FEATURES), dtype=np.float32)
        return e, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32), e, np.empty(0, dtype=np.float32)
    return (np.concatenate(s), np.concatenate(a), np.concatenate(r).astype(np.float32), np.concatenate(s2),
            np.concatenate(done))
