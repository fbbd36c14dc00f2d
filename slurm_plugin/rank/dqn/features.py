"""The DQN's state: 12 features per pending job, the same function in the simulator and in the live daemon.

Every feature is scaled to about [0, 1] so one model serves machines of any size. With n = requested cores,
r = time limit (s), w = wait so far (s, negative waits count as 0), C = cores of the machine, Q = the queue:

====  ================  =================================================================================
 idx  name              value
====  ================  =================================================================================
  0   size_frac         min(n / C, 1)                                       (request size)
  1   log_size          log2(1 + n) / log2(1 + C)
  2   log_limit         min(log10(max(r, 1)) / log10(7 d), 1.5)            (time limit)
  3   log_wait          min(log1p(w) / log1p(7 d), 1.5)                     (wait so far)
  4   wait_ratio        min(log1p(w / r) / log1p(100), 1.5)                 (expansion so far)
  5   log_area          log10(1 + n r) / log10(1 + C x 7 d)                 (core-seconds asked)
  6   limit_pct         rank of r among Q's limits / (|Q| - 1)              (0 = shortest)
  7   size_pct          rank of n among Q's sizes / (|Q| - 1)               (0 = smallest)
  8   backlog           min(log1p(sum_Q n r / C / 3600) / log1p(1000), 1.5)  (machine-hours queued)
  9   pressure          min(sum_Q n / C, 4) / 4                             (cores asked / cores owned)
 10   scarcity          1 - (cores able to run the job / C)                 (arch/accelerator scarcity)
 11   qos               qos priority / max qos priority                     (QoS tier)
====  ================  =================================================================================

``backlog`` and ``pressure`` are the queue's load on the job's node group: in the simulator (whose ranking
view carries no constraints) the whole machine is the group and ``scarcity`` is 0; live, ``scarcity`` comes
from the node groups able to run the job (:func:`scarcity_of`). Example: a 4-core 1 h job that waited 1 h
on an idle 64-core machine alone in the queue has size_frac 0.0625, wait_ratio 0.15, pressure 0.0156.
"""

from __future__ import annotations

import numpy as np

FEATURES: tuple[str, ...] = ("size_frac", "log_size", "log_limit", "log_wait", "wait_ratio", "log_area",
                             "limit_pct", "size_pct", "backlog", "pressure", "scarcity", "qos")
N_FEATURES = len(FEATURES)
WEEK_S = 7 * 86400.0


# numpy's own values of the constant denominators, computed once (each is the np.float64 the table's formula
# divides by, so the cached figure is the same number, bit for bit)
_LOG10_WEEK = np.log10(WEEK_S)
_LOG1P_WEEK = np.log1p(WEEK_S)
_LOG1P_100 = np.log1p(100.0)
_LOG1P_1000 = np.log1p(1000.0)
_PER_MACHINE: dict[float, tuple] = {}  # c -> (log2(1 + c), log10(1 + c x 7 d)): a run asks for one machine


def _machine_denominators(c: float) -> tuple:
    got = _PER_MACHINE.get(c)
    if got is None:
        if len(_PER_MACHINE) > 64:
            _PER_MACHINE.clear()
        got = _PER_MACHINE[c] = (np.log2(1.0 + c), np.log10(1.0 + c * WEEK_S))
    return got


def _pct(values: np.ndarray) -> np.ndarray:
    """Rank of each value among ``values`` (ties share the lowest rank), scaled to [0, 1]."""
    n = len(values)
    if n <= 1:
        return np.zeros(n)
    return np.sort(values).searchsorted(values, side="left") / (n - 1)


def job_features(submit: np.ndarray, limit: np.ndarray, procs: np.ndarray, qos: np.ndarray, now: float,
                 total_cores: float, scarcity: np.ndarray | None = None,
                 max_qos: float | None = None) -> np.ndarray:
    """Features (len(submit) x 12, float32) of the pending jobs given as arrays; see the module table.

    Computed column by column in float64 into one (12, n) buffer, in place where the table's formula allows,
    and cast to float32 once: the same operations on the same numbers as the table's formulas, so the same bits
    (``tests/unit/rank/test_dqn_features_oracle.py`` holds the straightforward version and compares)."""
    n = len(submit)
    if n == 0:
        return np.empty((0, N_FEATURES), dtype=np.float32)
    c = max(float(total_cores), 1.0)
    t = np.empty((N_FEATURES, n))
    procs = np.asarray(procs, dtype=float)
    limit = np.maximum(np.asarray(limit, dtype=float), 1.0)
    area = procs * limit
    _job_columns(t, procs, limit, area, c, scarcity)
    _queue_columns(t, submit, procs, limit, area, qos, now, c, max_qos)
    return t.T.astype(np.float32, order="C")


def _job_columns(t: np.ndarray, procs: np.ndarray, limit: np.ndarray, area: np.ndarray, c: float,
                 scarcity: np.ndarray | None) -> None:
    """Fill the columns of ``t`` (12 x n, float64) that depend on the job alone: 0-2, 5 and 10. ``limit`` is
    already at least 1 s and ``area`` is procs x limit."""
    log2_c, log10_cw = _machine_denominators(c)
    col = t[0]
    np.divide(procs, c, out=col)
    np.minimum(col, 1.0, out=col)
    col = t[1]
    np.add(procs, 1.0, out=col)
    np.log2(col, out=col)
    col /= log2_c
    col = t[2]
    np.log10(limit, out=col)
    col /= _LOG10_WEEK
    np.minimum(col, 1.5, out=col)
    col = t[5]
    np.add(area, 1.0, out=col)
    np.log10(col, out=col)
    col /= log10_cw
    t[10] = 0.0 if scarcity is None else np.clip(scarcity, 0.0, 1.0)


def _queue_columns(t: np.ndarray, submit: np.ndarray, procs: np.ndarray, limit: np.ndarray, area: np.ndarray,
                   qos: np.ndarray, now: float, c: float, max_qos: float | None) -> None:
    """Fill the columns of ``t`` that depend on the time or on the whole queue: 3, 4, 6-9 and 11."""
    wait = np.subtract(now, np.asarray(submit, dtype=float))
    np.maximum(wait, 0.0, out=wait)
    col = t[3]
    np.log1p(wait, out=col)
    col /= _LOG1P_WEEK
    np.minimum(col, 1.5, out=col)
    col = t[4]
    np.divide(wait, limit, out=col)
    np.log1p(col, out=col)
    col /= _LOG1P_100
    np.minimum(col, 1.5, out=col)
    t[6] = _pct(limit)
    t[7] = _pct(procs)
    t[8] = _backlog(area.sum(), c)
    t[9] = min(procs.sum() / c, 4.0) / 4.0
    qos = np.asarray(qos, dtype=float)
    top = max_qos if max_qos else float(qos.max(initial=0.0))
    if top > 0:
        np.divide(qos, top, out=t[11])
    else:
        t[11] = 0.0


# rows of TableFeatures.packed after the 12 feature rows: the per-job figures the queue columns read (limit and
# procs adjacent for one sort, procs and area adjacent for one sum)
_SUBMIT, _LIMIT, _PROCS, _AREA, _QOS = range(N_FEATURES, N_FEATURES + 5)
_WAIT_DEN = np.array([[_LOG1P_WEEK], [_LOG1P_100]])  # columns 3 and 4 divide by these (same np.float64 values)


def _backlog(area_sum: float, c: float) -> float:
    """Feature 8 of a queue whose jobs ask ``area_sum`` core-seconds on ``c`` cores."""
    return min(np.log1p(area_sum / c / 3600.0) / _LOG1P_1000, 1.5)


class TableFeatures:
    """:func:`job_features` of queues drawn from one fixed set of jobs (a simulation's job table): the columns
    that depend on the job alone are computed once for every job, each queue's rows are taken from them and only
    the time- and queue-dependent columns are computed per call. Same numbers, bit for bit: every column is an
    element-wise formula or a reduction over the queue's own values in its order, as in :func:`job_features`.

    The per-job figures live in one (17, jobs) float64 array (the 12 feature rows, then submit, limit, procs,
    area, qos), so a queue costs one gather, and the paired columns are computed as (2, n) blocks (the two wait
    columns, the two percentile sorts, the two sums): ~15 numpy calls per queue, each an element-wise IEEE
    operation, libm call or per-row reduction on the same numbers as :func:`_queue_columns`'s."""

    def __init__(self, submit: np.ndarray, limit: np.ndarray, procs: np.ndarray, qos: np.ndarray,
                 total_cores: float, scarcity: np.ndarray | None = None, max_qos: float | None = None):
        self.c = max(float(total_cores), 1.0)
        self.max_qos = max_qos
        self.packed = p = np.zeros((N_FEATURES + 5, len(submit)))
        p[_SUBMIT] = np.asarray(submit, dtype=float)
        p[_PROCS] = np.asarray(procs, dtype=float)
        p[_LIMIT] = np.maximum(np.asarray(limit, dtype=float), 1.0)
        np.multiply(p[_PROCS], p[_LIMIT], out=p[_AREA])
        p[_QOS] = np.asarray(qos, dtype=float)
        _job_columns(p, p[_PROCS], p[_LIMIT], p[_AREA], self.c, scarcity)
        self.submit, self.procs, self.limit, self.area, self.qos = p[_SUBMIT], p[_PROCS], p[_LIMIT], p[_AREA], p[_QOS]
        self.fixed = p[:N_FEATURES]
        # feature 11 of every queue is 0 (the packed row's value) when no top QoS is given and no job has one
        self.qos_zero = not max_qos and not (p[_QOS] > 0).any()

    def backlog(self, rows: np.ndarray) -> float:
        """Feature 8 (``backlog``) of the queue made of the jobs ``rows``: the same number as in its features."""
        return _backlog(self.area[rows].sum(), self.c)

    def __call__(self, rows: np.ndarray, now: float, sums: tuple[float, float] | None = None) -> np.ndarray:
        """Features (len(rows) x 12, float32) of the queue made of the jobs ``rows`` (in that order) at ``now``.
        ``sums``: the queue's (procs, area) sums when the caller keeps them, which must be the numbers numpy's sum
        gives (whole numbers below 2**53 are, in any order)."""
        n = len(rows)
        if n == 0:
            return np.empty((0, N_FEATURES), dtype=np.float32)
        t = self.packed[:, rows]
        c = self.c
        wait = t[3]
        np.subtract(now, t[_SUBMIT], out=wait)
        np.maximum(wait, 0.0, out=wait)
        np.divide(wait, t[_LIMIT], out=t[4])
        waits = t[3:5]  # log1p(w) / log1p(7 d) and log1p(w / r) / log1p(100), each at most 1.5
        np.log1p(waits, out=waits)
        waits /= _WAIT_DEN
        np.minimum(waits, 1.5, out=waits)
        if n > 1:  # _pct of the limits and of the sizes
            srt = t[_LIMIT:_PROCS + 1].copy()  # np.sort(.., axis=1) without its Python wrapper
            srt.sort(axis=1)
            np.divide(srt[0].searchsorted(t[_LIMIT]), n - 1, out=t[6])
            np.divide(srt[1].searchsorted(t[_PROCS]), n - 1, out=t[7])
        else:
            t[6:8] = 0.0
        procs_sum, area_sum = t[_PROCS:_AREA + 1].sum(axis=1).tolist() if sums is None else sums
        t[8] = _backlog(area_sum, c)
        t[9] = min(procs_sum / c, 4.0) / 4.0
        if not self.qos_zero:
            top = self.max_qos if self.max_qos else float(t[_QOS].max(initial=0.0))
            if top > 0:
                np.divide(t[_QOS], top, out=t[11])
            else:
                t[11] = 0.0
        return t[:N_FEATURES].T.astype(np.float32, order="C")


def scarcity_of(able_cores: np.ndarray, total_cores: float) -> np.ndarray:
    """1 - the fraction of the machine's cores on nodes able to run each job (0 = any node will do)."""
    return 1.0 - np.clip(np.asarray(able_cores, dtype=float) / max(float(total_cores), 1.0), 0.0, 1.0)
