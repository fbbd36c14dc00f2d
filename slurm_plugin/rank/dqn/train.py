"""Double DQN training in the simulator (needs torch: the ``train`` extra). Exports numpy weights.

Loop: per episode, draw a training sequence (round-robin over the sources), play it in the Slurm-like
simulator with epsilon-greedy bands (:class:`.episodes.Recorder`), push its per-job transitions into a
replay buffer, then take ``updates`` gradient steps on Huber loss against the Double DQN target
``r + gamma (1 - done) Q_target(s', argmax_a Q_online(s', a))``; the target network copies the online one every
``target_every`` steps. Every ``eval_every`` episodes the greedy policy is scored on fixed validation
sequences (average bounded slowdown, backfill on); the best such checkpoint is the result. Everything is
seeded (numpy, torch, the sequence draws); torch runs single-threaded so a run repeats bit for bit.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass

import numpy as np

from .episodes import Recorder, Source, play, sequences, split, transitions
from .evaluate import evaluate
from .model import N_BANDS, DqnModel
from .policy import DqnRanking
from .features import N_FEATURES

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    episodes: int = 300
    seq_len: int = 256
    hidden: tuple[int, ...] = (32, 32)
    gamma: float = 0.95
    lr: float = 1e-3
    batch: int = 256
    updates: int = 40
    buffer: int = 200_000
    target_every: int = 200
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_frac: float = 0.6
    price: float = 1.0
    eval_every: int = 25
    val_seqs: int = 8
    seed: int = 1


class Replay:
    """A ring buffer of (s, a, r, s', done), seeded sampling."""

    def __init__(self, size: int, rng: np.random.Generator):
        self.s = np.zeros((size, N_FEATURES), np.float32)
        self.s2 = np.zeros((size, N_FEATURES), np.float32)
        self.a = np.zeros(size, np.int64)
        self.r = np.zeros(size, np.float32)
        self.d = np.zeros(size, np.float32)
        self.size, self.n, self.pos, self.rng = size, 0, 0, rng

    def add(self, s, a, r, s2, d) -> None:
        for lo in range(0, len(a), self.size):
            k = min(len(a) - lo, self.size)
            idx = (self.pos + np.arange(k)) % self.size
            self.s[idx], self.a[idx], self.r[idx] = s[lo:lo + k], a[lo:lo + k], r[lo:lo + k]
            self.s2[idx], self.d[idx] = s2[lo:lo + k], d[lo:lo + k]
            self.pos = (self.pos + k) % self.size
            self.n = min(self.n + k, self.size)

    def sample(self, k: int):
        i = self.rng.integers(0, self.n, k)
        return self.s[i], self.a[i], self.r[i], self.s2[i], self.d[i]


def _net(torch, hidden: tuple[int, ...]):
    layers, width = [], N_FEATURES
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    layers.append(torch.nn.Linear(width, N_BANDS))
    return torch.nn.Sequential(*layers)


def to_numpy(net) -> DqnModel:
    """The torch Sequential's Linear layers as a :class:`DqnModel` (weights transposed to (in, out))."""
    lin = [m for m in net if hasattr(m, "weight")]
    return DqnModel([m.weight.detach().cpu().numpy().T.copy() for m in lin],
                    [m.bias.detach().cpu().numpy().copy() for m in lin])


def train(sources: list[Source], cfg: TrainConfig, progress=None) -> tuple[DqnModel, dict]:
    """Train on the ``train`` split of ``sources``; returns (best model by validation bsld, history)."""
    import torch
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(cfg.seed)
    train_jobs = [split(s.jobs, "train") for s in sources]
    val = [(s, sequences(split(s.jobs, "val"), cfg.val_seqs, cfg.seq_len, np.random.default_rng(cfg.seed + 7)))
           for s in sources]
    online, target = _net(torch, cfg.hidden), _net(torch, cfg.hidden)
    target.load_state_dict(online.state_dict())
    opt = torch.optim.Adam(online.parameters(), lr=cfg.lr)
    replay = Replay(cfg.buffer, rng)
    history: list[dict] = []
    best: tuple[float, DqnModel | None, int] = (np.inf, None, -1)
    steps, t0 = 0, time.perf_counter()
    for ep in range(cfg.episodes + 1):
        if ep % cfg.eval_every == 0 or ep == cfg.episodes:
            model = to_numpy(online)
            score = _validate(model, val)
            history.append({"episode": ep, "val_bsld": score, "wall_s": time.perf_counter() - t0})
            log.info("episode %d: validation bsld %.2f", ep, score)
            if score < best[0]:
                best = (score, model, ep)
        if ep == cfg.episodes:
            break
        k = ep % len(sources)
        src = sources[k]
        seq = sequences(train_jobs[k], 1, cfg.seq_len, rng)[0]
        eps = max(cfg.eps_end, cfg.eps_start - (cfg.eps_start - cfg.eps_end) * ep / max(cfg.eps_frac * cfg.episodes, 1))
        rec = Recorder(to_numpy(online), float(src.machine.cores), eps, rng)
        play(src.machine, seq, rec)
        replay.add(*transitions(rec, np.minimum(seq.run, seq.limit), cfg.price))
        if replay.n >= cfg.batch:
            for _ in range(cfg.updates):
                _step(torch, online, target, opt, replay.sample(cfg.batch), cfg.gamma)
                steps += 1
                if steps % cfg.target_every == 0:
                    target.load_state_dict(online.state_dict())
        if progress:
            progress(1)
    model = best[1]
    model.meta = {"train_config": {**asdict(cfg), "hidden": list(cfg.hidden)}, "best_episode": best[2],
                  "val_bsld": best[0], "history": history, "train_wall_s": time.perf_counter() - t0,
                  "sources": [s.name for s in sources]}
    return model, {"history": history}


def _validate(model: DqnModel, val) -> float:
    """Mean over sources of the validation bsld (backfill on), so no source dominates by its scale."""
    return float(np.mean([evaluate(s.machine, seqs, DqnRanking(model, float(s.machine.cores)), True)["avg_bsld"]
                          for s, seqs in val]))


def _step(torch, online, target, opt, batch, gamma: float) -> float:
    s, a, r, s2, d = (torch.from_numpy(np.ascontiguousarray(v)) for v in batch)
    q = online(s).gather(1, a.view(-1, 1)).squeeze(1)
    with torch.no_grad():
        a2 = online(s2).argmax(1, keepdim=True)
        y = r + gamma * (1.0 - d) * target(s2).gather(1, a2).squeeze(1)
    loss = torch.nn.functional.smooth_l1_loss(q, y)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(online.parameters(), 10.0)
    opt.step()
    return loss.item()
