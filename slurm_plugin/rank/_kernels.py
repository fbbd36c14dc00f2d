"""numba kernels of :mod:`.compiled` (imported only through it: importing this module imports numba and loads,
or compiles and caches, the kernels). Each ``*_rows`` function is the heuristic of :mod:`.heuristics` of the same
name for the jobs ``rows`` of a whole-table view at ``now``, with the same float64 operations in the same order."""

import math

import numba
import numpy as np

njit = numba.njit(cache=True, nogil=True, error_model="numpy")


LOG1P, LOG2, POW = 0, 1, 2  # libm's operations the probes compare with numpy's


@njit
def libm_all(v, op, e):
    """libm's log1p, log2 or pow(., e) (``op``) of each value, as the kernels call them: compared with numpy's
    before any kernel is used (:func:`.compiled.load`'s probes)."""
    out = np.empty_like(v)
    for i in range(len(v)):
        x = v[i]
        out[i] = math.log1p(x) if op == LOG1P else (math.log2(x) if op == LOG2 else math.pow(x, e))
    return out


@njit
def wfp3_rows(submit, limit, procs, rows, now):
    """heuristics.wfp3: -((now - submit) / max(limit, 1e-9))^3 x procs."""
    out = np.empty(len(rows))
    for i in range(len(rows)):
        r = rows[i]
        lim = 1e-9 if limit[r] < 1e-9 else limit[r]  # np.maximum(limit, 1e-9), NaN kept
        out[i] = -math.pow((now - submit[r]) / lim, 3.0) * procs[r]
    return out


@njit
def unicep_rows(submit, limit, procs, rows, now):
    """heuristics.unicep: -(wait + 1e-15) / (log2(procs + 1e-15) x max(limit, 1e-9))."""
    out = np.empty(len(rows))
    for i in range(len(rows)):
        r = rows[i]
        lim = 1e-9 if limit[r] < 1e-9 else limit[r]  # np.maximum(limit, 1e-9), NaN kept
        out[i] = -((now - submit[r]) + 1e-15) / (math.log2(procs[r] + 1e-15) * lim)
    return out


@njit
def multifactor_rows(submit, procs, nodes, qos, rows, now, w_age, w_size, w_qos, max_age_s, procs_den, total_nodes,
                     qos_den):
    """heuristics.Multifactor.__call__ with ``procs_den`` = max(total_procs, 1), ``qos_den`` = max(max_qos, 1e-9)
    and the node term when ``total_nodes`` is not 0."""
    out = np.empty(len(rows))
    for i in range(len(rows)):
        r = rows[i]
        age = min((now - submit[r]) / max_age_s, 1.0)
        size = min(procs[r] / procs_den, 1.0)
        if total_nodes != 0:
            size = (size + min(nodes[r] / total_nodes, 1.0)) / 2
        out[i] = -np.floor(w_age * age + w_size * size + w_qos * (qos[r] / qos_den))
    return out
