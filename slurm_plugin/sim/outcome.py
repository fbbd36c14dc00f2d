"""What a simulation run produced (:class:`Outcome`), shared by the general loop (:mod:`.engine`) and the
count-based one (:mod:`.exclusive`) without either importing the other for it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Outcome:
    """What happened: per-job times (NaN = never started), energy, cost and a timeline."""

    alloc: np.ndarray
    begin: np.ndarray
    end: np.ndarray
    group_core_s: np.ndarray
    energy_j: float
    cost: float
    timeouts: int
    events: int
    timeline: dict[str, list[float]] = field(default_factory=dict)
    wall_s: float = 0.0
