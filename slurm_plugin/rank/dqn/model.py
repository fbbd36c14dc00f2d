"""The DQN's weights and metadata in one small versioned ``.npz`` file, and numpy inference (no torch).

File layout: arrays ``w0, b0, w1, b1, ..`` (layer i maps ``w{i}.shape[0]`` inputs to ``w{i}.shape[1]``
outputs, ReLU between layers, none after the last) and ``meta``: a JSON string with at least
``format`` (:data:`FORMAT`), ``features`` (the feature names, which must equal
:data:`.features.FEATURES`) and ``bands``; training adds seed, data, hyper-parameters and evaluation figures.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...data import data_file
from ...fsio import write_file_atomic
from .features import FEATURES, N_FEATURES

FORMAT = "hetsched-dqn/2"  # 2: bands shift log10 time limit by DELTA each (1: bands replaced the order)
N_BANDS = 8
CHUNK = 192  # rows per matmul: OpenBLAS runs products under 4 x 65536 multiply-adds on one thread, which
# keeps a loaded 2-core host from stalling on BLAS thread hand-offs (70 ms -> 16 ms for 10,000 jobs)
DEFAULT_MODEL = data_file("models", "dqn_default.npz")
# Bounds checked before anything is decompressed (the default model: 13 KB on disk, 76 KB unpacked).
MAX_MODEL_BYTES = 16 << 20  # the .npz file
MAX_ARRAY_BYTES = 64 << 20  # one array unpacked (a 4096 x 4096 float32 layer)
MAX_UNPACKED_BYTES = 128 << 20  # every array unpacked
MAX_LAYERS = 16


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
        light = self.gated(x[:, FEATURES.index("backlog")], x[:, FEATURES.index("scarcity")])
        if light is not None and light.all():  # the gate holds every job: no need to run the network
            return np.zeros(len(x), dtype=np.int64)
        best = self.greedy(x)
        if light is not None:
            best[light] = 0
        return best

    def greedy(self, x: np.ndarray) -> np.ndarray:
        """:meth:`bands` without the backlog gate: the best band of each job (``margin`` applied)."""
        q = self.q(x)
        best = q.argmax(axis=1)
        margin = float(self.meta.get("margin", 0.0))
        if margin > 0:
            best[q[np.arange(len(q)), best] - q[:, 0] <= margin] = 0
        return best

    def gated(self, backlog: np.ndarray, scarcity: np.ndarray) -> np.ndarray | None:
        """Which jobs the backlog gate keeps in band 0, from their ``backlog`` and ``scarcity`` feature columns;
        None without a gate. When it keeps all of them :meth:`bands` is all zeros without running the network."""
        gate = self.meta.get("backlog_gate")
        if gate is None:
            return None
        light = backlog <= float(gate)
        if self.meta.get("gate_constrained"):
            light &= scarcity <= 0
        return light

    @property
    def gates_whole_queues(self) -> bool:
        """Whether the backlog gate, if any, holds a whole queue or none of it (it is not ``gate_constrained``:
        every job of a queue has the same ``backlog``). Then ``bands(x)`` is all zeros when
        ``gates_all(backlog)``, else ``greedy(x)``."""
        return not self.meta.get("gate_constrained")

    def gates_all(self, backlog: float) -> bool:
        """Whether a gate that :attr:`gates_whole_queues` keeps a queue whose ``backlog`` feature is ``backlog``
        in band 0 (False without a gate), decided as :meth:`gated` decides on the float32 feature."""
        if self.meta.get("backlog_gate") is None:
            return False
        return bool(self.gated(np.array([backlog], dtype=np.float32), np.zeros(1, dtype=np.float32))[0])

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
    """Write ``model`` (float32 weights + JSON metadata) to ``path`` (.npz), atomically: a crash leaves the
    old file or the new one, never a partial one. Raises :class:`ModelError` for a model :func:`load_model`
    would refuse (non-finite weights, wrong shapes), so a diverged training run never replaces a good model."""
    path = Path(path)
    meta = {"format": FORMAT, "features": list(FEATURES), "bands": N_BANDS, **model.meta}
    ws = [np.asarray(w, dtype=np.float32) for w in model.weights]
    bs = [np.asarray(b, dtype=np.float32) for b in model.biases]
    _check_layers(path, ws, bs)
    _check_meta(path, meta)
    arrays = {f"w{i}": w for i, w in enumerate(ws)}
    arrays.update({f"b{i}": b for i, b in enumerate(bs)})
    buf = io.BytesIO()
    np.savez_compressed(buf, meta=np.array(json.dumps(meta, sort_keys=True, default=float)), **arrays)
    return write_file_atomic(path, buf.getvalue())


def _check_archive(path: Path) -> None:
    """Refuse a file whose size, members or unpacked arrays (from the zip directory and each ``.npy`` header,
    read before any data) exceed the bounds above, or whose arrays are not float/text."""
    size = path.stat().st_size
    if size > MAX_MODEL_BYTES:
        raise ModelError(f"{path}: {size:,} bytes, a model is at most {MAX_MODEL_BYTES:,}")
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        if len(infos) > 2 * MAX_LAYERS + 1:
            raise ModelError(f"{path}: {len(infos)} arrays, a model has at most {2 * MAX_LAYERS + 1}")
        total = 0
        for info in infos:
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version not in ((1, 0), (2, 0)):
                    raise ModelError(f"{path}: {info.filename}: .npy format {version} is not supported")
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) \
                    else np.lib.format.read_array_header_2_0
                shape, _, dtype = read(fh)
            nbytes = math.prod(shape) * dtype.itemsize
            if dtype.kind not in "fU" or max(nbytes, info.file_size) > MAX_ARRAY_BYTES:
                raise ModelError(f"{path}: {info.filename}: {dtype} array of shape {shape} ({nbytes:,} bytes "
                                 f"unpacked); want float or text arrays of at most {MAX_ARRAY_BYTES:,} bytes")
            total += nbytes
        if total > MAX_UNPACKED_BYTES:
            raise ModelError(f"{path}: {total:,} bytes unpacked, a model is at most {MAX_UNPACKED_BYTES:,}")


def load_model(path: str | Path) -> DqnModel:
    """Read a model; raise :class:`ModelError` (never anything else) if it is missing, corrupt or foreign."""
    path = Path(path)
    try:
        _check_archive(path)
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            n = sum(1 for k in z.files if k.startswith("w"))
            ws = [np.asarray(z[f"w{i}"], dtype=np.float32) for i in range(n)]
            bs = [np.asarray(z[f"b{i}"], dtype=np.float32) for i in range(n)]
    except FileNotFoundError:
        raise ModelError(f"{path}: no such model file") from None
    except ModelError:
        raise
    except Exception as err:  # zip/npz/json errors of a corrupt file all mean the same thing here
        raise ModelError(f"{path}: not a readable model ({type(err).__name__}: {err})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelError(f"{path}: format {meta.get('format') if isinstance(meta, dict) else None!r}, want {FORMAT}")
    if meta.get("features") != list(FEATURES):
        raise ModelError(f"{path}: trained on features {meta.get('features')}, this code computes {list(FEATURES)}")
    _check_layers(path, ws, bs)
    _check_meta(path, meta)
    return DqnModel(ws, bs, meta)


def _check_layers(path: Path, ws: list[np.ndarray], bs: list[np.ndarray]) -> None:
    """Layer i maps the previous width to k outputs (``(width, k)`` weights, ``(k,)`` biases), all finite,
    from the features to the bands."""
    if not ws or len(ws) != len(bs) or len(ws) > MAX_LAYERS:
        raise ModelError(f"{path}: {len(ws)} weight and {len(bs)} bias arrays, want 1..{MAX_LAYERS} of each")
    width = N_FEATURES
    for i, (w, b) in enumerate(zip(ws, bs)):
        if w.ndim != 2 or w.shape[0] != width or b.shape != (w.shape[1],):
            raise ModelError(f"{path}: layer {i} has shape {w.shape}/{b.shape}, want ({width}, k)/(k,)")
        for name, a in (("weights", w), ("biases", b)):
            bad = int(a.size - np.isfinite(a).sum())
            if bad:
                raise ModelError(f"{path}: layer {i} has {bad} non-finite {name} (NaN or Inf)")
        width = w.shape[1]
    if width != N_BANDS:
        raise ModelError(f"{path}: {width} outputs, want {N_BANDS} bands")


def _check_meta(path: Path, meta: dict) -> None:
    """The metadata the model's behaviour reads (``margin``, ``backlog_gate``) are finite numbers."""
    for key in ("margin", "backlog_gate"):
        value = meta.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value)):
            raise ModelError(f"{path}: meta {key} is {value!r}, want a finite number")
