"""numba kernels of :mod:`.compiled` (imported only through it: importing this module imports numba and loads,
or compiles and caches, the kernels). Each is a heuristic of :mod:`.heuristics` (or the part of it around a
transcendental function) for the jobs ``rows`` of a whole-table view at ``now``, with the same float64 operations
in the same order. No kernel calls libm: numpy computes every ``pow``, ``log2`` and ``log1p`` (its SIMD code can
differ from libm in the last bit, e.g. on AVX-512 hosts), so the scores are numpy's on any host."""

import numba
import numpy as np

njit = numba.njit(cache=True, nogil=True, error_model="numpy")


@njit
def wfp3_ratios(submit, limit, rows, now):
    """heuristics.wfp3's (now - submit) / max(limit, 1e-9) of the jobs ``rows`` (numpy then cubes them)."""
    out = np.empty(len(rows))
    for i in range(len(rows)):
        r = rows[i]
        lim = 1e-9 if limit[r] < 1e-9 else limit[r]  # np.maximum(limit, 1e-9), NaN kept
        out[i] = (now - submit[r]) / lim
    return out


@njit
def wfp3_finish(cubes, procs, rows):
    """heuristics.wfp3 from numpy's cubes of :func:`wfp3_ratios`: -cube x procs."""
    out = np.empty(len(rows))
    for i in range(len(rows)):
        out[i] = -cubes[i] * procs[rows[i]]
    return out


@njit
def unicep_rows(submit, limit, log2_procs, rows, now):
    """heuristics.unicep: -(wait + 1e-15) / (log2(procs + 1e-15) x max(limit, 1e-9)), the log2 given per job
    (numpy's, of the whole table)."""
    out = np.empty(len(rows))
    for i in range(len(rows)):
        r = rows[i]
        lim = 1e-9 if limit[r] < 1e-9 else limit[r]  # np.maximum(limit, 1e-9), NaN kept
        out[i] = -((now - submit[r]) + 1e-15) / (log2_procs[r] * lim)
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
