"""The DQN's scored pass compiled with numba: one call computes a queue's features and greedy bands.

A simulated pass that must score its queue (:meth:`.policy.DqnRanking.scores_rows`) costs ~45 µs in numpy on a
median queue of 10 jobs, almost all of it the ~30 numpy calls' own overhead; this kernel does the same work in one
call (~10 µs). It computes every feature with the operations of :meth:`.features.TableFeatures.__call__` on the
same float64 numbers (libm's ``log1p``, which numpy also calls unless it has SIMD code of its own for the host:
:func:`kernel` checks both agree on a probe of values and refuses the kernel if not), casts them to float32, and
runs the network in float32 with each output's sum taken over the inputs in order, one rounding per operation (no
fused multiply-add), then the greedy band. numpy's products go through the host's BLAS, whose kernels sum in
their own blocked order (and differ between CPUs), so the Q-values can differ from numpy's in the last bits; the
greedy bands, hence the scores and the schedule, are checked equal on every scored queue of the shared traces
(``tests/unit/rank/test_dqn_compiled.py``).

numba is a dependency, and the numpy code stays the fallback: without numba (or with ``HETSCHED_DQN_COMPILED=0``
or ``HETSCHED_COMPILED=0``) :func:`kernel` returns None and numpy scores. Compiled code is cached on disk (numba's
cache: beside this file, else the user's cache directory): a process pays ~0.5 s once to import numba and load the
kernel, and the first process after an install ~4 s to compile it (measured on a 2-core EPYC VM).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..compiled import PROBE, load
from .features import N_FEATURES, TableFeatures
from .model import DqnModel

ENV = "HETSCHED_DQN_COMPILED"  # "0": never use the DQN's compiled kernel (HETSCHED_COMPILED=0: no kernel at all)


def kernel() -> tuple[Callable, Callable] | None:
    """The compiled ``(_kernels.scores, _kernels.order)`` (use them through :class:`Scorer`); None when numba is
    missing or fails to import, ``HETSCHED_DQN_COMPILED=0`` or ``HETSCHED_COMPILED=0``, or the compiled ``log1p``
    disagrees with numpy's on this host (:func:`..compiled.load`). Loaded once per process."""
    k = load("DQN kernel", _import_kernels, _probes, extra_env=ENV)
    return None if k is None else (k.scores, k.order)


def _import_kernels():
    from . import _kernels
    return _kernels


def _probes(k) -> bool:
    from .. import _kernels as libm  # already imported by the DQN's kernels
    if not np.array_equal(libm.libm_all(PROBE, libm.LOG1P, 0.0), np.log1p(PROBE)):
        return False
    # compile or load the kernels' one signature now, not inside the first simulation
    w, b = np.zeros((N_FEATURES, N_FEATURES), dtype=np.float32), np.zeros(N_FEATURES, dtype=np.float32)
    for g in (k.scores, k.order):
        g(np.ones((N_FEATURES + 5, 2)), np.arange(2, dtype=np.int64), 1.0, 1.0, 0.0, 0.0, -1.0, w, b, w, b, w, b,
          np.zeros(2), 0.25)
    return True


class Scorer:
    """The compiled kernels bound to one job table (a :class:`.features.TableFeatures`, its jobs' log10 limits)
    and a model: :meth:`scores` and :meth:`order` of a queue given its exact (procs, area) sums, as
    :meth:`.features.TableFeatures.__call__` takes them. Built by :func:`scorer`."""

    def __init__(self, f, feats: TableFeatures, log_limit: np.ndarray, model: DqnModel, delta: float):
        self._scores, self._order = f
        # the one signature the kernels are compiled for: C-contiguous float64 tables, float32 layers, int64 rows
        # (any other would compile a new one, ~4 s, inside a simulation)
        packed, log_limit = (np.ascontiguousarray(a, dtype=np.float64) for a in (feats.packed, log_limit))
        ws, bs = ([np.ascontiguousarray(a, dtype=np.float32) for a in arrays]
                  for arrays in (model.weights, model.biases))
        qos_top = -1.0 if feats.qos_zero else float(feats.max_qos or 0.0)
        self._head = (packed,)
        self._tail = (qos_top, ws[0], bs[0], ws[1], bs[1], ws[2], bs[2], log_limit, float(delta))
        self._c = float(feats.c)

    def scores(self, rows: np.ndarray, now: float, procs_sum: float, area_sum: float) -> np.ndarray:
        """:meth:`.policy.DqnRanking.scores_rows`'s scores of the queue ``rows``."""
        if rows.dtype != np.int64 or not rows.flags.c_contiguous:
            rows = np.ascontiguousarray(rows, dtype=np.int64)
        return self._scores(*self._head, rows, float(now), self._c, float(procs_sum), float(area_sum), *self._tail)

    def order(self, rows: list[int], now: float, procs_sum: float, area_sum: float) -> list[int]:
        """The queue ``rows`` stably sorted by :meth:`scores` (one call: the simulator's scored pass)."""
        return self._order(*self._head, np.array(rows, dtype=np.int64), float(now), self._c, float(procs_sum),
                           float(area_sum), *self._tail).tolist()


def scorer(feats: TableFeatures, log_limit: np.ndarray, model: DqnModel, delta: float) -> Scorer | None:
    """A :class:`Scorer` of ``feats``'s table for ``model``; None when there is no :func:`kernel` or the model is
    not the shape it runs (three layers, no ``margin``: then the numpy code scores)."""
    if len(model.weights) != 3 or model.meta.get("margin", 0.0) > 0:
        return None
    f = kernel()
    return None if f is None else Scorer(f, feats, log_limit, model, delta)
