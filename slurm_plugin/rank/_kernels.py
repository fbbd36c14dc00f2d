"""numba kernels of :mod:`.compiled` (imported only through it: importing this module imports numba and loads,
or compiles and caches, the kernels). Each ``*_rows`` function is the heuristic of :mod:`.heuristics` of the same
name for the jobs ``rows`` of a whole-table view at ``now``, with the same float64 operations in the same order."""

import math

import numba
import numpy as np

njit = numba.njit(cache=True, nogil=True, error_model="numpy")


@njit
def pow_all(v, e):
    """math.pow(x, e) of each value (libm's): compared with numpy's np.power before the kernels are used."""
    out = np.empty_like(v)
    for i in range(len(v)):
        out[i] = math.pow(v[i], e)
    return out


@njit
def log2_all(v):
    """math.log2 of each value (libm's): compared with numpy's np.log2 before the kernels are used."""
    out = np.empty_like(v)
    for i in range(len(v)):
        out[i] = math.log2(v[i])
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
