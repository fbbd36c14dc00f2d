"""Baseline job rankings as vectorised scores: lower score = scheduled sooner.

Each scorer takes a :class:`QueueView` (arrays over the pending jobs) and returns one float per job, so the
simulator and the live daemon rank whole queues with a few numpy operations. Formulas follow Zhang et al.,
"RLScheduler" (SC20) and its code (DIR-LAB/deep-batch-scheduler, ``HPCSimPickJobs.py``): with s = submit
time, r = requested time, n = requested processors, w = wait:

- FCFS: s          - SJF: r (ties by s)
- WFP3: -(w / r)^3 * n         - UNICEP: -w / (log2(n) * r)
- F1: log10(r) * n + 870 * log10(s)       (log10 arguments <= 0 are replaced by 0.1, as in their code)
- multifactor: -floor(w_age * min(w / max_age, 1) + w_size * n / total_procs + w_qos * qos / max_qos), an
  approximation of Slurm's priority/multifactor (integer priority) with fair share, partition and
  association factors at 0.
- weighted: a_est * ln(r) + a_size * ln(n) - a_age * ln(w + 60 s), the parametric family the tuner searches
  (``hetsched tune``): (1, 0, 0) is SJF, (0, 0, 1) FCFS, (3, -1, 3) WFP3's order; only the ratios matter.

WFP3 and UNICEP depend on the current time (``static = False``); the others can be cached per job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class QueueView:
    """The pending jobs as arrays: submit (s), limit (requested time, s), procs (total cores), qos priority;
    ``able`` (optional): cores of the nodes whose arch/GRES suit each job (None = the whole machine);
    ``nodes`` (optional): nodes each job asks for (Slurm's job size factor counts them).
    ``rows`` and ``table`` (optional, the simulator's): the jobs' rows in ``table``, a view of every job of the
    run (the same object on every pass), so a ranking may compute what depends on the job alone once per run."""

    submit: np.ndarray
    limit: np.ndarray
    procs: np.ndarray
    qos: np.ndarray
    now: float
    able: np.ndarray | None = None
    nodes: np.ndarray | None = None
    rows: np.ndarray | None = None
    table: QueueView | None = None


def rows_view(table: QueueView, rows: np.ndarray, now: float) -> QueueView:
    """The view of ``table``'s jobs ``rows`` at ``now`` (every array ``table`` has, gathered; ``rows``/``table``
    set): what the simulator shows a ranking that does not score by rows."""
    def take(a):
        return None if a is None else a[rows]
    return QueueView(table.submit[rows], table.limit[rows], table.procs[rows], table.qos[rows], now, take(table.able),
                     take(table.nodes), rows, table)


def fcfs(q: QueueView) -> np.ndarray:
    return q.submit.astype(float)


def sjf(q: QueueView) -> np.ndarray:
    return q.limit.astype(float)


def wfp3(q: QueueView) -> np.ndarray:
    wait = q.now - q.submit
    return -np.power(wait / np.maximum(q.limit, 1e-9), 3) * q.procs


def unicep(q: QueueView) -> np.ndarray:
    wait = q.now - q.submit
    return -(wait + 1e-15) / (np.log2(q.procs + 1e-15) * np.maximum(q.limit, 1e-9))


def f1(q: QueueView) -> np.ndarray:
    r = np.where(q.limit > 0, q.limit, 0.1)
    s = np.where(q.submit > 0, q.submit, 0.1)
    return np.log10(r) * q.procs + 870.0 * np.log10(s)


@dataclass(frozen=True)
class Multifactor:
    """Slurm priority/multifactor approximation; weights as in slurm.conf (PriorityWeight*). With
    ``total_nodes`` and the view's ``nodes`` the job size factor is Slurm's default one,
    (nodes / all nodes + CPUs / all CPUs) / 2, so a 2-node 1-core job outranks a 1-node 16-core one on a cluster
    of 10 nodes and 456 CPUs; without them, CPUs / all CPUs."""

    weight_age: float = 1000.0
    weight_size: float = 100.0
    weight_qos: float = 1000.0
    max_age_s: float = 7 * 86400.0
    total_procs: float = 1.0
    max_qos: float = 1.0
    total_nodes: float = 0.0

    def __call__(self, q: QueueView) -> np.ndarray:
        age = np.minimum((q.now - q.submit) / self.max_age_s, 1.0)
        size = np.minimum(q.procs / max(self.total_procs, 1.0), 1.0)
        if self.total_nodes and q.nodes is not None:
            size = (size + np.minimum(q.nodes / self.total_nodes, 1.0)) / 2
        qos = q.qos / max(self.max_qos, 1e-9)
        # Slurm stores the priority as an integer (truncated), so small differences tie (then: by submit, id)
        return -np.floor(self.weight_age * age + self.weight_size * size + self.weight_qos * qos)


AGE_OFFSET_S = 60.0  # a fresh job's age in the weighted score: ln(0) is not defined


@dataclass(frozen=True)
class Weighted:
    """The weighted family: lower score = sooner; ``w_age`` > 0 makes the score change with the wait."""

    w_estimate: float = 1.0
    w_size: float = 0.0
    w_age: float = 0.0

    def __call__(self, q: QueueView) -> np.ndarray:
        score = self.w_estimate * np.log(np.maximum(q.limit, 1.0)) + self.w_size * np.log(np.maximum(q.procs, 1))
        if self.w_age:
            score = score - self.w_age * np.log(np.maximum(q.now - q.submit, 0.0) + AGE_OFFSET_S)
        return score


Scorer = Callable[[QueueView], np.ndarray]
# name -> (scorer, static): every baseline, registered in one place.
HEURISTICS: dict[str, tuple[Scorer, bool]] = {
    "fcfs": (fcfs, True),
    "sjf": (sjf, True),
    "wfp3": (wfp3, False),
    "unicep": (unicep, False),
    "f1": (f1, True),
}
