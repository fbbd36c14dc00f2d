"""The DQN's weights and metadata in one small versioned ``.npz`` file, and numpy inference (no torch).

File layout: arrays ``w0, b0, w1, b1, ..`` (layer i maps ``w{i}.shape[0]`` inputs to ``w{i}.shape[1]``
outputs, ReLU between layers, none after the last) and ``meta``: a JSON string with at least
``format`` (:data:`FORMAT`), ``features`` (the feature names, which must equal
:data:`.features.FEATURES`) and ``bands``; training adds seed, data, hyper-parameters and evaluation figures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...data import data_file
from .features import FEATURES, N_FEATURES

FORMAT = "hetsched-dqn/2"  # 2: bands shift log10 time limit by DELTA each (1: bands replaced the order)
N_BANDS = 8
CHUNK = 192  # rows per matmul: OpenBLAS runs products under 4 x 65536 multiply-adds on one thread, which
# keeps a loaded 2-core host from stalling on BLAS thread hand-offs (70 ms -> 16 ms for 10,000 jobs)
DEFAULT_MODEL = data_file("models", "dqn_default.npz")


class ModelError(ValueError):
    """The model file is missing, unreadable, or not a model this code can run."""


@dataclass
class DqnModel:
    """An MLP Q-network: ``q(x)`` maps (n, 12) features to (n, 8) Q-values, one per priority band
    (band 0 = highest priority). ``bands(x)`` is the greedy band of each job, except that a job stays in
    band 0 unless its best band's Q-value beats band 0's by more than ``meta["margin"]`` (default 0), and
    every job stays in band 0 while the queue's ``backlog`` feature is at or below ``meta["backlog_gate"]``
    (absent: no gate): the model moves jobs off plain SJF order only where it is sure enough and only under
    load. With ``meta["gate_constrained"]`` true the gate holds only unconstrained jobs (``scarcity`` 0), so
    jobs only some node groups can run keep their learned band on a light queue too (a homogeneous machine
    has scarcity 0 everywhere: there it changes nothing)."""

    weights: list[np.ndarray]
    biases: list[np.ndarray]
    meta: dict = field(default_factory=dict)

    def q(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        if len(x) <= CHUNK:
            return self._forward(x)
        return np.concatenate([self._forward(x[i:i + CHUNK]) for i in range(0, len(x), CHUNK)])

    def _forward(self, h: np.ndarray) -> np.ndarray:
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w
            h += b
            if i < last:
                np.maximum(h, 0.0, out=h)
        return h

    def bands(self, x: np.ndarray) -> np.ndarray:
        if len(x) == 0:
            return np.empty(0, dtype=np.int64)
        q = self.q(x)
        best = np.argmax(q, axis=1)
        margin = float(self.meta.get("margin", 0.0))
        if margin > 0:
            best[q[np.arange(len(q)), best] - q[:, 0] <= margin] = 0
        gate = self.meta.get("backlog_gate")
        if gate is not None:
            light = x[:, FEATURES.index("backlog")] <= float(gate)
            if self.meta.get("gate_constrained"):
                light &= x[:, FEATURES.index("scarcity")] <= 0
            best[light] = 0
        return best

    @classmethod
    def init(cls, hidden: tuple[int, ...] = (32, 32), seed: int = 0) -> DqnModel:
        """Random (He-uniform) weights; tests and warm starts."""
        rng = np.random.default_rng(seed)
        sizes = (N_FEATURES, *hidden, N_BANDS)
        ws, bs = [], []
        for a, b in zip(sizes[:-1], sizes[1:]):
            lim = np.sqrt(6.0 / a)
            ws.append(rng.uniform(-lim, lim, (a, b)).astype(np.float32))
            bs.append(np.zeros(b, dtype=np.float32))
        return cls(ws, bs, {"format": FORMAT, "features": list(FEATURES), "bands": N_BANDS})


def save_model(model: DqnModel, path: str | Path) -> Path:
    """Write ``model`` (float32 weights + JSON metadata) to ``path`` (.npz)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"format": FORMAT, "features": list(FEATURES), "bands": N_BANDS, **model.meta}
    arrays = {f"w{i}": w.astype(np.float32) for i, w in enumerate(model.weights)}
    arrays.update({f"b{i}": b.astype(np.float32) for i, b in enumerate(model.biases)})
    with open(path, "wb") as fh:
        np.savez_compressed(fh, meta=np.array(json.dumps(meta, sort_keys=True, default=float)), **arrays)
    return path


def load_model(path: str | Path) -> DqnModel:
    """Read a model; raise :class:`ModelError` (never anything else) if it is missing, corrupt or foreign."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            n = sum(1 for k in z.files if k.startswith("w"))
            ws = [np.asarray(z[f"w{i}"], dtype=np.float32) for i in range(n)]
            bs = [np.asarray(z[f"b{i}"], dtype=np.float32) for i in range(n)]
    except FileNotFoundError:
        raise ModelError(f"{path}: no such model file") from None
    except Exception as err:  # zip/npz/json errors of a corrupt file all mean the same thing here
        raise ModelError(f"{path}: not a readable model ({type(err).__name__}: {err})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelError(f"{path}: format {meta.get('format') if isinstance(meta, dict) else None!r}, want {FORMAT}")
    if meta.get("features") != list(FEATURES):
        raise ModelError(f"{path}: trained on features {meta.get('features')}, this code computes {list(FEATURES)}")
    _check_shapes(path, ws, bs)
    return DqnModel(ws, bs, meta)


def _check_shapes(path: Path, ws: list[np.ndarray], bs: list[np.ndarray]) -> None:
    if not ws:
        raise ModelError(f"{path}: no layers")
    width = N_FEATURES
    for i, (w, b) in enumerate(zip(ws, bs)):
        if w.ndim != 2 or w.shape[0] != width or b.shape != (w.shape[1],) or not np.isfinite(w).all():
            raise ModelError(f"{path}: layer {i} has shape {w.shape}/{b.shape}, want ({width}, k)/(k,), finite")
        width = w.shape[1]
    if width != N_BANDS:
        raise ModelError(f"{path}: {width} outputs, want {N_BANDS} bands")
