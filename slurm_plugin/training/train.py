"""Double DQN training in the simulator (needs torch: the ``train`` extra). Exports numpy weights.

1. Warm start (:func:`_warm_start`): the network is fitted to a teacher's bands (:class:`Teacher`: SJF with
   a size offset while the queue holds more than about 7 machine-hours, log10 limit + ``teacher_size`` x
   log10 cores) and the replay buffer is seeded with the teacher's episodes. ``teacher_size=0`` makes the
   teacher plain SJF (one band for every job). ``teacher_low > 0`` also orders the light queue: below the
   backlog, constrained jobs (``scarcity`` > 0: only some node groups can run them) go big first (log10
   limit - ``teacher_low`` x log10 cores, as bands), the others stay in band 0; the model's gate then holds
   only unconstrained jobs (``meta["gate_constrained"]``), since it would erase those bands.
2. Double DQN: per episode, draw a training sequence (round-robin over the sources), play it in the
   Slurm-like simulator with epsilon-greedy bands (:class:`.episodes.Recorder`), push its per-job
   transitions (reward: :mod:`.episodes`) into the replay buffer, then take ``updates`` Adam steps on the
   Huber loss against ``r + gamma (1 - done) Q_target(s', argmax_a Q_online(s', a))``; the target network
   copies the online one every ``target_every`` steps.
3. Selection: every ``eval_every`` episodes (and before the first) the greedy policy, gated like the teacher
   (``backlog_gate``: every job in band 0, i.e. plain SJF, while the queue's backlog feature is at or below
   it; the gate goes into the model file, so simulator and daemon apply it too), is scored on fixed
   validation sequences (bsld with backfill / SJF's, the *worst* over sources, so a checkpoint that gains on
   one workload by losing on another is not taken; ties by the mean over sources); the best checkpoint is
   returned and its whole history goes into the model's metadata.

Everything is seeded (numpy, torch, the sequence draws) and torch runs on one thread, so a run repeats
bit for bit.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass

import numpy as np

from ..rank.dqn.features import FEATURES, N_FEATURES
from ..rank.dqn.model import N_BANDS, DqnModel
from ..rank.dqn.policy import DELTA, DqnRanking
from ..sim.hooks import ranking
from .episodes import SPLITS, Recorder, Source, play, sequences, split, transitions
from .evaluate import evaluate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    episodes: int = 300
    seq_len: int = 256
    hidden: tuple[int, ...] = (32, 32)
    gamma: float = 0.95
    lr: float = 3e-5
    batch: int = 256
    updates: int = 40
    buffer: int = 200_000
    target_every: int = 200
    eps_start: float = 0.3  # the warm start already plays the teacher's bands
    eps_end: float = 0.05
    eps_frac: float = 0.6
    price: float = 3.0
    eval_every: int = 5
    val_seqs: int = 48  # 16 picked checkpoints by noise (val 0.57x SJF on Lublin-1, test worse than episode 0)
    seed: int = 1
    warm_episodes: int = 20
    warm_steps: int = 2000
    warm_lr: float = 1e-3
    teacher_size: float = 0.5
    teacher_backlog: float = 0.3
    teacher_low: float = 0.0  # > 0: below the backlog the teacher puts big jobs first (see Teacher)
    backlog_gate: float | None = 0.3  # evaluated and shipped models act only above this backlog (None: always)
    train_part: tuple[float, float] = SPLITS["train"]  # the slice of each source's jobs trained on
    val_part: tuple[float, float] = SPLITS["val"]  # ... and the slice checkpoints are chosen on
    keep_start: bool = True  # False: the episode-0 checkpoint (warm start or the given start model) is not chosen


@dataclass(frozen=True)
class Teacher:
    """Warm-start bands: ``round(size x log10(cores) / DELTA)`` clipped to 0..7 where the queue's ``backlog``
    feature exceeds ``backlog`` (0.3: about 7 machine-hours queued), else 0; so the played order is log10 limit
    + size x log10 cores under load and SJF otherwise (cores recovered from ``log_size`` and the machine's
    ``total_cores``). Example: size 0.5 under load, a 100-core job -> band 4. With ``low`` > 0 the light queue
    is ordered too: jobs only some node groups can run (``scarcity`` > 0) go big first, band
    ``round(low x log10(total_cores / cores) / DELTA)``, i.e. log10 limit - low x log10 cores (low 0.25 on 456
    cores: a 1-core job -> band 3, a 456-core job -> band 0); unconstrained jobs stay in band 0 (SJF). On a
    homogeneous machine (scarcity 0 everywhere) the light queue is thus plain SJF. Only the warm start uses it.
    (Heuristic sweeps, validation splits: big-first for every job lost 3 % to SJF on LANL-CM5; for the
    constrained jobs only it gained 1.5 % on the synthetic workload and left LANL-CM5 unchanged; the models
    warm-started from it did not beat the shipped one: results/rank/README.md.)"""

    size: float
    total_cores: float
    backlog: float = 0.3
    low: float = 0.0

    def bands(self, x: np.ndarray) -> np.ndarray:
        cores = np.maximum(np.exp2(x[:, FEATURES.index("log_size")] * np.log2(1.0 + self.total_cores)) - 1.0, 1.0)
        b = np.clip(np.rint(self.size * np.log10(cores) / DELTA), 0, N_BANDS - 1)
        light = np.clip(np.rint(self.low * np.log10(max(self.total_cores, 1.0) / cores) / DELTA), 0, N_BANDS - 1)
        light = np.where(x[:, FEATURES.index("scarcity")] > 0, light, 0)
        return np.where(x[:, FEATURES.index("backlog")] > self.backlog, b, light).astype(np.int64)


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


def load_weights(torch, net, model: DqnModel) -> None:
    """Copy ``model``'s numpy weights into the torch Sequential ``net`` (the inverse of :func:`to_numpy`);
    raises ValueError when the layer sizes differ."""
    lin = [m for m in net if hasattr(m, "weight")]
    shapes = [tuple(w.shape) for w in model.weights]
    if shapes != [tuple(m.weight.shape[::-1]) for m in lin]:
        raise ValueError(f"start model layers {shapes} do not match the network {[tuple(m.weight.shape[::-1]) for m in lin]}")
    with torch.no_grad():
        for m, w, b in zip(lin, model.weights, model.biases):
            m.weight.copy_(torch.from_numpy(np.ascontiguousarray(w.T)))
            m.bias.copy_(torch.from_numpy(np.asarray(b)))


def train(sources: list[Source], cfg: TrainConfig, progress=None, val_sources: tuple[Source, ...] = (),
          start: DqnModel | None = None, deadline: float | None = None) -> tuple[DqnModel, dict]:
    """Train on the ``cfg.train_part`` slice of ``sources``, select on the ``cfg.val_part`` slice of ``sources``
    and of ``val_sources`` (traces never trained on: selection for transfer); returns (best model by validation
    bsld, {"history": per evaluation, "checkpoints": episode -> evaluated model}). ``start``: begin from these
    weights (same layer sizes as ``cfg.hidden``) instead of the teacher's warm start. ``deadline``
    (``time.monotonic()``): after the episode running when it passes, evaluate once more and stop
    (``meta["stopped_early"]``; the run is then no longer repeatable bit for bit)."""
    import torch
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(cfg.seed)
    train_jobs = [split(s.jobs, cfg.train_part) for s in sources]
    val = [(s, sequences(split(s.jobs, cfg.val_part), cfg.val_seqs, cfg.seq_len,
                         np.random.default_rng(cfg.seed + 7)))
           for s in (*sources, *val_sources)]
    ref = [_bsld(s.machine, seqs, ranking("sjf")) for s, seqs in val]
    online, target = _net(torch, cfg.hidden), _net(torch, cfg.hidden)
    if start is not None:
        load_weights(torch, online, start)
    target.load_state_dict(online.state_dict())
    opt = torch.optim.Adam(online.parameters(), lr=cfg.lr)
    replay = Replay(cfg.buffer, rng)
    if start is None:
        _warm_start(torch, online, replay, sources, train_jobs, cfg, rng)
    target.load_state_dict(online.state_dict())
    history: list[dict] = []
    checkpoints: dict[int, DqnModel] = {}
    best: tuple[tuple[float, float], DqnModel | None, int] = ((np.inf, np.inf), None, -1)
    steps, t0, stopped = 0, time.perf_counter(), False
    for ep in range(cfg.episodes + 1):
        stopped = ep > 0 and ep < cfg.episodes and deadline is not None and time.monotonic() >= deadline
        if ep % cfg.eval_every == 0 or ep == cfg.episodes or stopped:
            model = checkpoints[ep] = to_numpy(online)
            if cfg.backlog_gate is not None:
                model.meta["backlog_gate"] = cfg.backlog_gate  # the episodes themselves play ungated
                if cfg.teacher_low > 0:
                    model.meta["gate_constrained"] = True
            per = _validate(model, val, ref)
            score = max(per)
            history.append({"episode": ep, "val_bsld_over_sjf": score, "per_source": per,
                            "wall_s": time.perf_counter() - t0})
            log.info("episode %d: validation bsld / SJF's %.3f (per source %s)", ep, score,
                     ", ".join(f"{v:.3f}" for v in per))
            key = (round(score, 4), float(np.mean(per)))
            if key < best[0] and (cfg.keep_start or ep > 0):
                best = (key, model, ep)
        if ep == cfg.episodes or stopped:
            break
        k = ep % len(sources)
        src = sources[k]
        seq = sequences(train_jobs[k], 1, cfg.seq_len, rng)[0]
        eps = max(cfg.eps_end, cfg.eps_start - (cfg.eps_start - cfg.eps_end) * ep / max(cfg.eps_frac * cfg.episodes, 1))
        rec = Recorder(to_numpy(online), float(src.machine.cores), eps, rng)
        play(src.machine, seq, rec)
        replay.add(*transitions(rec, np.minimum(seq.run, seq.limit), seq.procs / src.machine.cores, cfg.price))
        if replay.n >= cfg.batch:
            for _ in range(cfg.updates):
                _step(torch, online, target, opt, replay.sample(cfg.batch), cfg.gamma)
                steps += 1
                if steps % cfg.target_every == 0:
                    target.load_state_dict(online.state_dict())
        if progress:
            progress(1)
    model = best[1]
    model.meta = {**model.meta, "train_config": {**asdict(cfg), "hidden": list(cfg.hidden)}, "best_episode": best[2],
                  "val_bsld_over_sjf": best[0][0], "val_mean_bsld_over_sjf": best[0][1], "val_sjf_bsld": ref,
                  "history": history,
                  "train_wall_s": time.perf_counter() - t0, "stopped_early": stopped,
                  "sources": [s.name for s in sources], "val_sources": [s.name for s in val_sources]}
    return model, {"history": history, "checkpoints": checkpoints}


def _warm_start(torch, online, replay: Replay, sources, train_jobs, cfg: TrainConfig, rng) -> None:
    """Behaviour cloning of :class:`Teacher`: play ``warm_episodes`` with its bands (10 % random), keep their
    transitions in the replay buffer (demonstrations), and fit the Q-network's argmax to the teacher's band
    (cross-entropy on the Q-values as logits) for ``warm_steps`` Adam steps at ``warm_lr``."""
    if cfg.warm_episodes <= 0:
        return
    states, labels = [], []
    for ep in range(cfg.warm_episodes):
        k = ep % len(sources)
        seq = sequences(train_jobs[k], 1, cfg.seq_len, rng)[0]
        cores = float(sources[k].machine.cores)
        teacher = Teacher(cfg.teacher_size, cores, cfg.teacher_backlog, cfg.teacher_low)
        rec = Recorder(teacher, cores, 0.1, rng)
        play(sources[k].machine, seq, rec)
        batch = transitions(rec, np.minimum(seq.run, seq.limit), seq.procs / cores, cfg.price)
        replay.add(*batch)
        states.append(batch[0])
        labels.append(teacher.bands(batch[0]))
    x = np.concatenate(states)
    y = np.concatenate(labels)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.Adam(online.parameters(), lr=cfg.warm_lr)
    for _ in range(cfg.warm_steps):
        i = torch.from_numpy(rng.integers(0, len(x), cfg.batch))
        loss = torch.nn.functional.cross_entropy(online(xt[i]), yt[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
    log.info("warm start: %d states, teacher agreement %.3f", len(x),
             float((online(xt).argmax(1) == yt).float().mean()))


def _bsld(machine, seqs, policy) -> float:
    return evaluate(machine, seqs, policy, True)["avg_bsld"]


def _validate(model: DqnModel, val, ref: list[float]) -> list[float]:
    """Per source, the validation bsld (backfill on) divided by SJF's on the same sequences; training keeps
    the checkpoint with the smallest worst ratio, so no source dominates by its scale and none is traded for
    another (< 1: better than SJF everywhere)."""
    return [float(_bsld(s.machine, seqs, DqnRanking(model, float(s.machine.cores))) / r)
            for (s, seqs), r in zip(val, ref)]


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
