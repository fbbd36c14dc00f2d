"""Compiled (numba) scoring for the simulator, and the one way such kernels are loaded.

A simulated pass that re-scores a dynamic ranking's queue spends most of its time in numpy's per-call overhead (a
view of ~9 gathered arrays, then ~6 element-wise calls, for queues of ~10-60 jobs). :func:`rows_scorer` gives a
heuristic of :mod:`.heuristics` as ``scores_rows(rows, table, now)``: a compiled call or two over the simulator's
job table with the same float64 operations in the same order, so the same scores bit for bit
(``tests/unit/rank/test_compiled_heuristics.py``). The kernels call no libm: numpy computes every transcendental
value (WFP3's cube, between two kernels; UNICEP's ``log2`` of each job's size, once per table), because numpy's
SIMD code for them can differ from libm in the last bit (it does on AVX-512 hosts), and the numpy scorers are the
reference.

:func:`load` is shared with the DQN's kernels (:mod:`.dqn.compiled`): None, and numpy scores, when numba is
missing or fails to import (no writable cache location, a numpy it does not support) or when
``HETSCHED_COMPILED=0``. Compiled code is cached on disk by numba (beside the module, else the user's cache
directory): importing numba and loading costs ~0.2-0.5 s once per process, compiling ~2-4 s after an install.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

import numpy as np

log = logging.getLogger(__name__)
ENV = "HETSCHED_COMPILED"  # "0": no compiled kernel anywhere (numpy scores)
_LOADED: dict = {}  # module name -> the loaded kernels module, or None: loaded once per process


def load(name: str, importer: Callable, warm: Callable[[object], None], extra_env: str | None = None):
    """The kernels module ``importer()`` returns (named ``name`` in logs), once per process, after ``warm(module)``
    has compiled or loaded its signatures (so that no simulation pays for it); None when switched off (:data:`ENV`
    or ``extra_env`` = "0") or when the import or the warm-up fails (then it says so in the log)."""
    if os.environ.get(ENV, "1") == "0" or (extra_env and os.environ.get(extra_env, "1") == "0"):
        return None
    if name not in _LOADED:
        _LOADED[name] = _load(name, importer, warm)
    return _LOADED[name]


def _load(name: str, importer: Callable, warm: Callable[[object], None]):
    try:
        mod = importer()
        warm(mod)
    except ImportError:  # numba is not installed (or cannot load with this numpy)
        return None
    except Exception as err:  # e.g. no writable cache location: numba refuses at decoration
        log.info("the compiled %s is unavailable (%s: %s): numpy scores", name, type(err).__name__, err)
        return None
    return mod


def _import_heuristics():
    from . import _kernels
    return _kernels


def _warm_heuristics(k) -> None:
    f, i = np.ones(2), np.arange(2, dtype=np.int64)
    k.wfp3_finish(k.wfp3_ratios(f, f, i, 1.0), f, i)
    k.unicep_rows(f, f, f, i, 1.0)
    k.multifactor_rows(f, f, i, f, i, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)


def heuristics_kernels():
    """The heuristics' kernels module (:mod:`._kernels`), or None (see :func:`load`)."""
    return load("heuristics", _import_heuristics, _warm_heuristics)


def has_rows_kernel(scorer) -> bool:
    """Whether :func:`rows_scorer` has a kernel for ``scorer`` (wfp3, unicep, a Multifactor); imports nothing."""
    from .heuristics import Multifactor, unicep, wfp3
    return scorer is wfp3 or scorer is unicep or isinstance(scorer, Multifactor)


def rows_scorer(name: str, scorer) -> Callable | None:
    """``scores_rows(rows, table, now)`` of the heuristic ``scorer`` (registered as ``name``): the scores it gives
    for :func:`.heuristics.rows_view` of ``table``'s jobs ``rows`` at ``now``, bit for bit; None when
    :func:`has_rows_kernel` does not hold or there are no kernels (:func:`heuristics_kernels`)."""
    from .heuristics import unicep, wfp3
    if not has_rows_kernel(scorer):
        return None
    k = heuristics_kernels()
    if k is None:
        return None
    if scorer is wfp3:
        def score(rows, table, now):
            rows = _int64(rows)
            cubes = k.wfp3_ratios(table.submit, table.limit, rows, float(now))
            np.power(cubes, 3, out=cubes)  # numpy's pow, as heuristics.wfp3 calls it
            return k.wfp3_finish(cubes, table.procs, rows)
        return score
    if scorer is unicep:
        log2_of = _PerTable(lambda procs: np.log2(procs + 1e-15))  # numpy's log2, as heuristics.unicep calls it

        def score(rows, table, now):
            return k.unicep_rows(table.submit, table.limit, log2_of(table.procs), _int64(rows), float(now))
        return score
    m = scorer
    weights = (float(m.weight_age), float(m.weight_size), float(m.weight_qos), float(m.max_age_s),
               float(max(m.total_procs, 1.0)))
    qos_den = float(max(m.max_qos, 1e-9))

    def score(rows, table, now):
        # the node term only with node counts in the table, as Multifactor.__call__ reads the view's
        total_nodes = float(m.total_nodes) if table.nodes is not None else 0.0
        nodes = table.nodes if table.nodes is not None else np.zeros(len(table.submit), dtype=np.int64)
        return k.multifactor_rows(table.submit, table.procs, nodes, table.qos, _int64(rows), float(now), *weights,
                                  total_nodes, qos_den)
    return score


def _int64(rows: np.ndarray) -> np.ndarray:
    """``rows`` as the kernels' one row signature (C-contiguous int64), without a copy when it already is."""
    if rows.dtype != np.int64 or not rows.flags.c_contiguous:
        return np.ascontiguousarray(rows, dtype=np.int64)
    return rows


class _PerTable:
    """``f(a)`` of the last array ``a`` it was given, computed again only for another array (the simulator's job
    table keeps its arrays, unchanged, for a whole run)."""

    def __init__(self, f: Callable[[np.ndarray], np.ndarray]):
        self._f, self._of, self._value = f, None, None

    def __call__(self, a: np.ndarray) -> np.ndarray:
        if a is not self._of:
            self._of, self._value = a, np.ascontiguousarray(self._f(a), dtype=np.float64)
        return self._value
