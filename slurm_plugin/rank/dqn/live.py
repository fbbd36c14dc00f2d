"""The live ranker: the pending jobs of a cluster snapshot -> one SiteFactor action per priority band.

``rank_pending(snapshot, model, site, now)`` is pure (no Slurm call): it computes the DQN's features for every
pending job of the snapshot, takes each job's greedy band b (0 = first) and sets SiteFactor
``(7 - b) x band_step`` for the jobs of each band in one action (the applier turns an action into one
``scontrol update jobid=a,b,c sitefactor=N`` per 500 jobs), so Slurm's own factors (job size, QoS, ...) still
order the jobs inside a band. Jobs that waited ``age_floor_s`` or more get the age floor instead: SiteFactor
``8 x band_step + hours waited`` (capped below the next step), above every band and oldest first, so no job
starves (Slurm 22.05 without slurmdbd ignores PriorityWeightAge). ``shadow=True`` logs what it would set
and returns no action. A missing or corrupt model gives the fallback: no action (plain multifactor) and one
warning line naming the file and the error.

Example: band_step 1000, a job in band 0 gets 7000, band 7 gets 0, a job pending for 30 h with a 24 h floor
gets 8030.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...decision import Decision, SetSiteFactor
from ...snapshot.model import Snapshot
from .features import job_features, scarcity_of
from .model import N_BANDS, DqnModel, ModelError, load_model

log = logging.getLogger(__name__)
DEFAULT_AGE_FLOOR_S = 24 * 3600.0
DEFAULT_BAND_STEP = 1000
DEFAULT_LIMIT_S = 86400.0  # a job without a time limit (and partition without MaxTime) counts as one day
SOURCE = "rank:dqn"


@dataclass(frozen=True)
class RankOptions:
    """How the live ranker maps bands to SiteFactor; ``shadow`` only logs."""

    age_floor_s: float = DEFAULT_AGE_FLOOR_S
    band_step: int = DEFAULT_BAND_STEP
    shadow: bool = False


def resolve_model(model: DqnModel | str | Path | None) -> DqnModel | None:
    """The model itself, or the model loaded from a path; None (after one warning line) when it cannot be."""
    if isinstance(model, DqnModel):
        return model
    if model is None:
        log.warning("rank: no DQN model configured; falling back to plain multifactor priority")
        return None
    try:
        return load_model(model)
    except ModelError as err:
        log.warning("rank: %s; falling back to plain multifactor priority (no SiteFactor changes)", err)
        return None


def queue_arrays(snapshot: Snapshot, site=None) -> dict[str, np.ndarray]:
    """The pending jobs of ``snapshot`` as arrays: ids, submit, limit (s), procs, qos priority, able cores."""
    pend = [j for j in snapshot.jobs if j.pending]
    qos_of = {q.name: float(q.priority) for q in site.policy.qos_tiers} if site is not None else {}
    able_of: dict[tuple, float] = {}

    def able(job) -> float:
        key = (job.features, tuple((g.name, g.type) for g in job.gres))
        if key not in able_of:
            able_of[key] = float(sum(n.cpus for n in snapshot.nodes if _can_run(n, *key)))
        return able_of[key]

    return {
        "ids": np.array([j.job_id for j in pend], dtype=np.int64),
        "submit": np.array([j.submit_time or snapshot.taken_at for j in pend], dtype=float),
        "limit": np.array([_limit_s(snapshot, j) for j in pend], dtype=float),
        "procs": np.array([j.cpus or j.node_count or 1 for j in pend], dtype=float),
        "qos": np.array([qos_of.get(j.qos, 0.0) for j in pend], dtype=float),
        "able": np.array([able(j) for j in pend], dtype=float),
    }


def _limit_s(snapshot: Snapshot, job) -> float:
    if job.time_limit_min:
        return job.time_limit_min * 60.0
    part = snapshot.partition(job.partition)
    return part.max_time_min * 60.0 if part and part.max_time_min else DEFAULT_LIMIT_S


def _can_run(node, features: str, gres: tuple[tuple[str, str | None], ...]) -> bool:
    """Whether ``node`` has one of the arch/feature alternatives of ``features`` ('a|b', 'a&b') and the GRES."""
    if features:
        alts = [a.strip("[]() ") for a in features.split("|")]
        if not any(all(f in node.features for f in alt.split("&") if f) for alt in alts):
            return False
    return all(node.gres_total(name, gtype or None) > 0 for name, gtype in gres)


def rank_pending(snapshot: Snapshot, model: DqnModel | str | Path | None, site=None, now: float | None = None,
                 options: RankOptions = RankOptions()) -> Decision:
    """One cycle's ranking decision (see the module docstring); never raises on a bad model."""
    m = resolve_model(model)
    if m is None:
        return Decision((), "rank:fallback-multifactor")
    now = snapshot.taken_at if now is None else now
    q = queue_arrays(snapshot, site)
    if not len(q["ids"]):
        return Decision((), SOURCE)
    total = float(sum(n.cpus for n in snapshot.nodes)) or float(q["procs"].max())
    scarce = scarcity_of(q["able"], total) if m.meta.get("uses_scarcity") else None
    max_qos = max([t.priority for t in site.policy.qos_tiers] or [0]) if site is not None else None
    x = job_features(q["submit"], q["limit"], q["procs"], q["qos"], now, total, scarce, max_qos or None)
    actions = band_actions(q["ids"], m.bands(x), now - q["submit"], options)
    if options.shadow:
        for a in actions:
            log.info("rank (shadow): would set sitefactor=%d on %d job(s) [%s]: %s", a.site_factor,
                     len(a.job_ids), a.reason, ",".join(map(str, a.job_ids[:20])))
        return Decision((), SOURCE + ":shadow")
    return Decision(tuple(actions), SOURCE)


def band_actions(ids: np.ndarray, bands: np.ndarray, wait_s: np.ndarray, options: RankOptions) -> list[SetSiteFactor]:
    """Group jobs into SetSiteFactor actions: one per band, one per whole hour waited past the age floor."""
    step = options.band_step
    groups: dict[int, list[int]] = defaultdict(list)
    reasons: dict[int, str] = {}
    floor = wait_s >= options.age_floor_s
    for job, band, w, old in zip(ids.tolist(), bands.tolist(), wait_s.tolist(), floor.tolist()):
        if old:
            value = N_BANDS * step + min(int(w // 3600), step - 1)
            reasons[value] = f"age floor: pending >= {options.age_floor_s / 3600:g} h"
        else:
            value = (N_BANDS - 1 - band) * step
            reasons[value] = f"dqn band {band} of {N_BANDS} (0 = first)"
        groups[value].append(job)
    return [SetSiteFactor(tuple(groups[v]), v, reasons[v]) for v in sorted(groups, reverse=True)]
