"""Any scored ranking live: the pending jobs of a snapshot ordered by a simulator-style ranking
(``scores(view)``, lower = sooner: the heuristics, the age floor) -> SiteFactor actions.

The scores' order becomes *levels* 0..LEVELS-1 (higher = sooner; distinct scores get distinct levels while
there are at most LEVELS of them, else equal shares of the order per level), composed with admission's class
and tier band and the age floor exactly as the DQN's live ranker does (:func:`.dqn.live.level_actions`).
Inside one level Slurm's own factors decide (age first), as the simulator's ties go by submit time.
The DQN keeps its own absolute levels (:func:`.dqn.live.rank_pending`).
"""

from __future__ import annotations

import numpy as np

from ..admission.classify import top_band
from ..decision import Decision
from ..snapshot.model import Snapshot
from .dqn.live import LEVELS, RankOptions, level_actions, queue_arrays
from .heuristics import QueueView


def score_levels(scores: np.ndarray) -> np.ndarray:
    """Levels 0..LEVELS-1 from scores (lower score = higher level); equal scores share a level."""
    distinct, dense = np.unique(np.asarray(scores, dtype=float), return_inverse=True)
    return (LEVELS - 1 - dense.reshape(-1) * LEVELS // max(len(distinct), LEVELS)).astype(np.int64)


def snapshot_view(snapshot: Snapshot, q: dict[str, np.ndarray], now: float) -> QueueView:
    """The simulator's queue view of the pending jobs in ``q`` (:func:`.dqn.live.queue_arrays`)."""
    return QueueView(q["submit"], q["limit"], q["procs"], q["qos"], now, q.get("able"))


def rank_by(snapshot: Snapshot, ranking, site=None, now: float | None = None,
            options: RankOptions = RankOptions()) -> Decision:
    """One cycle's SiteFactor actions from ``ranking`` (an object with ``name`` and ``scores(view)``)."""
    now = snapshot.taken_at if now is None else now
    source = f"rank:{ranking.name}"
    q = queue_arrays(snapshot, site, with_able=bool(getattr(ranking, "needs_able", False)),
                     accounting=options.accounting)
    if not len(q["ids"]):
        return Decision((), source)
    level = score_levels(ranking.scores(snapshot_view(snapshot, q, now)))
    top = top_band(site) if site is not None else 0
    return Decision(tuple(level_actions(q["ids"], level, q["policy"], now - q["submit"], top, options,
                                          ranking.name)), source)


def age_floor_only(snapshot: Snapshot, site=None, now: float | None = None,
                   options: RankOptions = RankOptions()) -> Decision:
    """Slurm's own multifactor order with the age floor: SiteFactor only for jobs pending ``age_floor_s`` or
    more (above every band, oldest first); the others keep what admission set."""
    now = snapshot.taken_at if now is None else now
    q = queue_arrays(snapshot, site, with_able=False, accounting=options.accounting)
    old = np.flatnonzero(now - q["submit"] >= options.age_floor_s)
    if not len(old):
        return Decision((), "rank:multifactor")
    top = top_band(site) if site is not None else 0
    acts = level_actions(q["ids"][old], np.zeros(len(old), np.int64), q["policy"][old], now - q["submit"][old],
                         top, options)
    return Decision(tuple(acts), "rank:multifactor")
