"""The DQN's scored pass compiled with numba: a queue's features and greedy bands in two calls around numpy's log1p.

A simulated pass that must score its queue (:meth:`.policy.DqnRanking.scores_rows`) costs ~45 µs in numpy on a
median queue of 10 jobs, almost all of it the ~30 numpy calls' own overhead; here one kernel gathers what the
features take ``log1p`` of, numpy takes it (one call: its SIMD ``log1p`` can differ from libm's in the last bit,
e.g. on AVX-512 hosts, and numpy's is the reference), and a second kernel computes every feature with the
operations of :meth:`.features.TableFeatures.__call__` on the same float64 numbers, casts them to float32, and runs
the network in float32 with each output's sum taken over the inputs in order, one rounding per operation (no fused
multiply-add), then the greedy band. numpy's products go through the host's BLAS, whose kernels sum in their own
blocked order (and differ between CPUs), so the Q-values can differ from numpy's in the last bits; the greedy
bands, hence the scores and the schedule, are checked equal on every scored queue of the shared traces
(``tests/unit/rank/test_dqn_compiled.py``).

numba is a dependency, and the numpy code stays the fallback: without numba (or with ``HETSCHED_DQN_COMPILED=0``
or ``HETSCHED_COMPILED=0``) :func:`kernel` returns None and numpy scores. Compiled code is cached on disk (numba's
cache: beside this file, else the user's cache directory): a process pays ~0.5 s once to import numba and load the
kernel, and the first process after an install ~4 s to compile it (measured on a 2-core EPYC VM).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..compiled import load
from .features import N_FEATURES, TableFeatures
from .model import DqnModel

ENV = "HETSCHED_DQN_COMPILED"  # "0": never use the DQN's compiled kernel (HETSCHED_COMPILED=0: no kernel at all)


def kernel() -> tuple[Callable, Callable, Callable] | None:
    """The compiled ``(_kernels.log1p_args, _kernels.scores, _kernels.order)`` (use them through :class:`Scorer`);
    None when numba is missing or fails to import, or ``HETSCHED_DQN_COMPILED=0`` or ``HETSCHED_COMPILED=0``
    (:func:`..compiled.load`). Loaded once per process."""
    k = load("DQN kernel", _import_kernels, _warm, extra_env=ENV)
    return None if k is None else (k.log1p_args, k.scores, k.order)


def _import_kernels():
    from . import _kernels
    return _kernels


def _warm(k) -> None:
    """Compile or load the kernels' one signature now, not inside the first simulation."""
    w, b = np.zeros((N_FEATURES, N_FEATURES), dtype=np.float32), np.zeros(N_FEATURES, dtype=np.float32)
    packed, rows = np.ones((N_FEATURES + 5, 2)), np.arange(2, dtype=np.int64)
    logs = k.log1p_args(packed, rows, 1.0, 1.0, 0.0)
    for g in (k.scores, k.order):
        g(packed, rows, logs, 1.0, 0.0, -1.0, w, b, w, b, w, b, np.zeros(2), 0.25)


class Scorer:
    """The compiled kernels bound to one job table (a :class:`.features.TableFeatures`, its jobs' log10 limits)
    and a model: :meth:`scores` and :meth:`order` of a queue given its exact (procs, area) sums, as
    :meth:`.features.TableFeatures.__call__` takes them. Built by :func:`scorer`."""

    def __init__(self, f, feats: TableFeatures, log_limit: np.ndarray, model: DqnModel, delta: float):
        self._args, self._scores, self._order = f
        # the one signature the kernels are compiled for: C-contiguous float64 tables, float32 layers, int64 rows
        # (any other would compile a new one, ~4 s, inside a simulation)
        packed, log_limit = (np.ascontiguousarray(a, dtype=np.float64) for a in (feats.packed, log_limit))
        ws, bs = ([np.ascontiguousarray(a, dtype=np.float32) for a in arrays]
                  for arrays in (model.weights, model.biases))
        qos_top = -1.0 if feats.qos_zero else float(feats.max_qos or 0.0)
        self._packed, self._c = packed, float(feats.c)
        self._tail = (qos_top, ws[0], bs[0], ws[1], bs[1], ws[2], bs[2], log_limit, float(delta))

    def _logs(self, rows: np.ndarray, now: float, area_sum: float) -> np.ndarray:
        logs = self._args(self._packed, rows, float(now), self._c, float(area_sum))
        return np.log1p(logs, out=logs)  # numpy's log1p, as TableFeatures takes it

    def scores(self, rows: np.ndarray, now: float, procs_sum: float, area_sum: float) -> np.ndarray:
        """:meth:`.policy.DqnRanking.scores_rows`'s scores of the queue ``rows``."""
        if rows.dtype != np.int64 or not rows.flags.c_contiguous:
            rows = np.ascontiguousarray(rows, dtype=np.int64)
        return self._scores(self._packed, rows, self._logs(rows, now, area_sum), self._c, float(procs_sum),
                            *self._tail)

    def order(self, rows: list[int], now: float, procs_sum: float, area_sum: float) -> list[int]:
        """The queue ``rows`` stably sorted by :meth:`scores` (the simulator's scored pass)."""
        r = np.array(rows, dtype=np.int64)
        return self._order(self._packed, r, self._logs(r, now, area_sum), self._c, float(procs_sum),
                           *self._tail).tolist()


def scorer(feats: TableFeatures, log_limit: np.ndarray, model: DqnModel, delta: float) -> Scorer | None:
    """A :class:`Scorer` of ``feats``'s table for ``model``; None when there is no :func:`kernel` or the model is
    not the shape it runs (three layers, no ``margin``: then the numpy code scores)."""
    if len(model.weights) != 3 or model.meta.get("margin", 0.0) > 0:
        return None
    f = kernel()
    return None if f is None else Scorer(f, feats, log_limit, model, delta)
