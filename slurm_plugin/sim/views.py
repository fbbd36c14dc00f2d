"""What the engine shows its policies each time it asks (read only): :class:`PowerView` for scaling,
:class:`PackView` for packing (the ranking's :class:`~slurm_plugin.rank.QueueView` lives with the rankings).
Below :mod:`.hooks` (the protocols and registries) and the policies that implement them (:mod:`.packing`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PowerView:
    """What a scaling policy sees: time, per-node state (see :mod:`.power`), seconds idle (-1 = busy or not
    on), and the number of pending jobs. Per node group (None when the caller does not track them): ``arrived``,
    jobs submitted so far, and ``backlog``, jobs pending now, each job counted against the cheapest group it may
    use (as the live planner counts its backlog)."""

    now: float
    state: np.ndarray
    idle_for: np.ndarray
    pending: int
    arrived: np.ndarray | None = None
    backlog: np.ndarray | None = None


@dataclass(frozen=True)
class PackView:
    """What a packing policy sees: time, the pending job rows most urgent first, the cluster (read only),
    a counter that changes whenever a job starts or ends, and each job's current request (``current(j)``)."""

    now: float
    pending: np.ndarray
    cluster: object
    epoch: int
    current: Callable[[int], object]
