"""The DQN as the simulator's :class:`~slurm_plugin.sim.hooks.RankingPolicy`, and the age floor any ranking
can wear.

``DqnRanking.scores(view)`` is each pending job's greedy priority band (0..7, lower = sooner); jobs of one band
keep submit order (the engine breaks ties by submit time, then id), as Slurm breaks SiteFactor ties by its own
factors. ``AgeFloor(inner, floor_s)`` puts every job that has waited ``floor_s`` or more ahead of all others
(oldest first), which is what the live ranker does with the top band.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

import numpy as np

from ..heuristics import QueueView
from .features import job_features
from .model import DEFAULT_MODEL, DqnModel, load_model

log = logging.getLogger(__name__)
MODEL_ENV = "HETSCHED_DQN_MODEL"  # `hetsched sim run --policy dqn` reads the model path from here


@dataclass
class DqnRanking:
    """Scores = greedy band of the Q-network on :func:`.features.job_features`. ``total_cores`` is the
    machine's; ``max_qos`` the top QoS priority (None = the queue's own maximum)."""

    model: DqnModel
    total_cores: float
    max_qos: float | None = None
    name: str = "dqn"
    static: bool = False
    calls: int = field(default=0, repr=False)

    def features(self, view: QueueView) -> np.ndarray:
        return job_features(view.submit, view.limit, view.procs, view.qos, view.now, self.total_cores,
                            max_qos=self.max_qos)

    def scores(self, view: QueueView) -> np.ndarray:
        self.calls += 1
        return self.model.bands(self.features(view)).astype(float)


@dataclass
class AgeFloor:
    """``inner``'s order, except that jobs waiting ``floor_s`` or more go first, oldest first."""

    inner: object
    floor_s: float
    static: bool = False

    @property
    def name(self) -> str:
        return f"{self.inner.name}+floor{self.floor_s / 3600:g}h"

    def scores(self, view: QueueView) -> np.ndarray:
        s = np.asarray(self.inner.scores(view), dtype=float)
        return np.where(view.now - view.submit >= self.floor_s, -np.inf, s)


def dqn_ranking(site=None, total_procs: float = 1.0, model_path: str | None = None) -> DqnRanking:
    """Factory for the simulator's registry: the model at ``model_path``, else ``$HETSCHED_DQN_MODEL``, else
    the shipped default; QoS scaled by the site's top tier when a site is given."""
    path = model_path or os.environ.get(MODEL_ENV) or DEFAULT_MODEL
    max_qos = None
    if site is not None:
        max_qos = float(max([q.priority for q in site.policy.qos_tiers] or [0])) or None
    return DqnRanking(load_model(path), float(total_procs), max_qos)
