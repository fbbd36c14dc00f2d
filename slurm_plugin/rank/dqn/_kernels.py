"""numba kernels of :mod:`.compiled` (imported only through it: importing this module imports numba and loads,
or compiles and caches, the kernels). They call no libm: the three ``log1p`` of a queue's features are numpy's,
computed between :func:`log1p_args` and :func:`scores` / :func:`order` (see :mod:`.compiled`)."""

import numpy as np

from .._kernels import njit  # the suite's numba options (cached, no GIL, numpy's error model)
from .features import _LIMIT, _LOG1P_100, _LOG1P_1000, _LOG1P_WEEK, _PROCS, _QOS, _SUBMIT, FEATURES

LOG1P_WEEK, LOG1P_100, LOG1P_1000 = float(_LOG1P_WEEK), float(_LOG1P_100), float(_LOG1P_1000)
SUBMIT, LIMIT, PROCS, QOS = _SUBMIT, _LIMIT, _PROCS, _QOS
# features() writes these columns by index (0-2, 5 and 10 are the packed job columns, 11 the QoS)
assert FEATURES == ("size_frac", "log_size", "log_limit", "log_wait", "wait_ratio", "log_area", "limit_pct",
                    "size_pct", "backlog", "pressure", "scarcity", "qos")


@njit
def dense(x, w, b, relu):
    """x @ w + b (float32; each output's sum over the inputs in order), then ReLU when ``relu``."""
    n, k = x.shape
    m = w.shape[1]
    out = np.zeros((n, m), dtype=np.float32)
    for i in range(n):
        o = out[i]
        for q in range(k):
            xi = x[i, q]
            wq = w[q]
            for j in range(m):
                o[j] = o[j] + xi * wq[j]
        for j in range(m):
            v = o[j] + b[j]
            o[j] = v if (v > 0 or not relu) else np.float32(0.0)
    return out


@njit
def log1p_args(packed, rows, now, c, area_sum):
    """What a queue's features take ``log1p`` of, in one array for numpy: each job's wait max(now - submit, 0),
    then each job's wait / limit, then the backlog's area_sum / c / 3600 (as TableFeatures computes them)."""
    n = len(rows)
    out = np.empty(2 * n + 1)
    for i in range(n):
        r = rows[i]
        wait = now - packed[SUBMIT, r]
        if wait < 0.0:
            wait = 0.0
        out[i] = wait
        out[n + i] = wait / packed[LIMIT, r]
    out[2 * n] = area_sum / c / 3600.0
    return out


@njit
def features(packed, rows, logs, backlog, pressure, qos_top):
    """TableFeatures.__call__(rows, now) of ``packed`` (TableFeatures.packed) given numpy's log1p of
    :func:`log1p_args` (``logs``) and the queue's backlog and pressure (features 8 and 9). Feature 11: the packed
    row's value when qos_top < 0 (no job has a QoS), else qos / top with top = qos_top if > 0, else the queue's
    largest QoS (0 when that is 0)."""
    n = len(rows)
    top = qos_top
    if top == 0:
        for i in range(n):
            top = max(top, packed[QOS, rows[i]])
    x = np.empty((n, 12), dtype=np.float32)
    lim = np.empty(n)
    procs = np.empty(n)
    for i in range(n):
        lim[i] = packed[LIMIT, rows[i]]
        procs[i] = packed[PROCS, rows[i]]
    s_lim = np.sort(lim)
    s_procs = np.sort(procs)
    for i in range(n):
        r = rows[i]
        f3 = logs[i] / LOG1P_WEEK
        f4 = logs[n + i] / LOG1P_100
        x[i, 0] = packed[0, r]
        x[i, 1] = packed[1, r]
        x[i, 2] = packed[2, r]
        x[i, 3] = f3 if f3 < 1.5 else 1.5
        x[i, 4] = f4 if f4 < 1.5 else 1.5
        x[i, 5] = packed[5, r]
        if n > 1:
            x[i, 6] = np.searchsorted(s_lim, lim[i]) / (n - 1)
            x[i, 7] = np.searchsorted(s_procs, procs[i]) / (n - 1)
        else:
            x[i, 6] = 0.0
            x[i, 7] = 0.0
        x[i, 8] = backlog
        x[i, 9] = pressure
        x[i, 10] = packed[10, r]
        if qos_top < 0:
            x[i, 11] = packed[11, r]
        elif top > 0:
            x[i, 11] = packed[QOS, r] / top
        else:
            x[i, 11] = 0.0
    return x


@njit
def scores(packed, rows, logs, c, procs_sum, qos_top, w0, b0, w1, b1, w2, b2, log_limit, delta):
    """log10 limit + delta x greedy band of each job of the queue ``rows`` whose procs sum is given, on ``c``
    cores, with ``logs`` numpy's log1p of :func:`log1p_args`: ``features`` (backlog and pressure as
    features._backlog and TableFeatures compute them), then the network."""
    n = len(rows)
    backlog = logs[2 * n] / LOG1P_1000
    x = features(packed, rows, logs, backlog if backlog < 1.5 else 1.5, min(procs_sum / c, 4.0) / 4.0, qos_top)
    h = dense(dense(dense(x, w0, b0, True), w1, b1, True), w2, b2, False)
    out = np.empty(n)
    for i in range(n):
        best = 0
        for j in range(1, h.shape[1]):
            if h[i, j] > h[i, best]:
                best = j
        out[i] = log_limit[rows[i]] + delta * best
    return out


@njit
def order(packed, rows, logs, c, procs_sum, qos_top, w0, b0, w1, b1, w2, b2, log_limit, delta):
    """``rows`` stably sorted by ``scores`` (lower first): the order a simulated pass walks."""
    return rows[np.argsort(scores(packed, rows, logs, c, procs_sum, qos_top, w0, b0, w1, b1, w2, b2, log_limit,
                                  delta), kind="mergesort")]
