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


def _pct(values: np.ndarray) -> np.ndarray:
    """Rank of each value among ``values`` (ties share the lowest rank), scaled to [0, 1]."""
    n = len(values)
    if n <= 1:
        return np.zeros(n)
    srt = np.sort(values)
    return np.searchsorted(srt, values, side="left") / (n - 1)


def job_features(submit: np.ndarray, limit: np.ndarray, procs: np.ndarray, qos: np.ndarray, now: float,
                 total_cores: float, scarcity: np.ndarray | None = None,
                 max_qos: float | None = None) -> np.ndarray:
    """Features (len(submit) x 12, float32) of the pending jobs given as arrays; see the module table."""
    n = len(submit)
    out = np.empty((n, N_FEATURES), dtype=np.float32)
    if n == 0:
        return out
    c = max(float(total_cores), 1.0)
    procs = np.asarray(procs, dtype=float)
    limit = np.maximum(np.asarray(limit, dtype=float), 1.0)
    wait = np.maximum(now - np.asarray(submit, dtype=float), 0.0)
    area = procs * limit
    out[:, 0] = np.minimum(procs / c, 1.0)
    out[:, 1] = np.log2(1.0 + procs) / np.log2(1.0 + c)
    out[:, 2] = np.minimum(np.log10(limit) / np.log10(WEEK_S), 1.5)
    out[:, 3] = np.minimum(np.log1p(wait) / np.log1p(WEEK_S), 1.5)
    out[:, 4] = np.minimum(np.log1p(wait / limit) / np.log1p(100.0), 1.5)
    out[:, 5] = np.log10(1.0 + area) / np.log10(1.0 + c * WEEK_S)
    out[:, 6] = _pct(limit)
    out[:, 7] = _pct(procs)
    out[:, 8] = min(np.log1p(area.sum() / c / 3600.0) / np.log1p(1000.0), 1.5)
    out[:, 9] = min(procs.sum() / c, 4.0) / 4.0
    out[:, 10] = 0.0 if scarcity is None else np.clip(scarcity, 0.0, 1.0)
    qos = np.asarray(qos, dtype=float)
    top = max_qos if max_qos else float(qos.max(initial=0.0))
    out[:, 11] = qos / top if top > 0 else 0.0
    return out


def scarcity_of(able_cores: np.ndarray, total_cores: float) -> np.ndarray:
    """1 - the fraction of the machine's cores on nodes able to run each job (0 = any node will do)."""
    return 1.0 - np.clip(np.asarray(able_cores, dtype=float) / max(float(total_cores), 1.0), 0.0, 1.0)
