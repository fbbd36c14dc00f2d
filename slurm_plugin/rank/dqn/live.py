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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...decision import Decision, SetSiteFactor
from ...snapshot.constraint import constraint_matches
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


def queue_arrays(snapshot: Snapshot, site=None, with_able: bool = True) -> dict[str, np.ndarray]:
    """The pending jobs of ``snapshot`` as arrays: ids, submit, limit (s), procs, qos priority, and (when
    ``with_able``) the cores of nodes able to run each job (computed once per distinct features/GRES ask)."""
    pend = [j for j in snapshot.jobs if j.state == "PENDING"]
    qos_of = {q.name: float(q.priority) for q in site.policy.qos_tiers} if site is not None else {}
    n = len(pend)
    out = {
        "ids": np.fromiter((j.job_id for j in pend), np.int64, n),
        "submit": np.fromiter((j.submit_time or snapshot.taken_at for j in pend), float, n),
        "limit": np.fromiter((j.time_limit_min or 0 for j in pend), float, n) * 60.0,
        "procs": np.fromiter((j.cpus or j.node_count or 1 for j in pend), float, n),
        "qos": np.fromiter((qos_of.get(j.qos, 0.0) for j in pend), float, n) if qos_of else np.zeros(n),
    }
    unset = np.flatnonzero(out["limit"] <= 0)
    out["limit"][unset] = [_limit_s(snapshot, pend[i]) for i in unset]
    if with_able:
        able_of: dict[tuple, float] = {}
        keys = [(j.features, tuple((g.name, g.type) for g in j.gres)) for j in pend]
        for k in set(keys):
            able_of[k] = float(sum(node.cpus for node in snapshot.nodes if _can_run(node, *k)))
        out["able"] = np.fromiter((able_of[k] for k in keys), float, n)
    return out


def _limit_s(snapshot: Snapshot, job) -> float:
    part = snapshot.partition(job.partition)
    return part.max_time_min * 60.0 if part and part.max_time_min else DEFAULT_LIMIT_S


def _can_run(node, features: str, gres: tuple[tuple[str, str | None], ...]) -> bool:
    """Whether ``node`` has one of the arch/feature alternatives of ``features`` ('a|b', 'a&b') and the GRES."""
    if not constraint_matches(features, node.features):
        return False
    return all(node.gres_total(name, gtype or None) > 0 for name, gtype in gres)


def rank_pending(snapshot: Snapshot, model: DqnModel | str | Path | None, site=None, now: float | None = None,
                 options: RankOptions = RankOptions()) -> Decision:
    """One cycle's ranking decision (see the module docstring); never raises on a bad model."""
    m = resolve_model(model)
    if m is None:
        return Decision((), "rank:fallback-multifactor")
    now = snapshot.taken_at if now is None else now
    uses_scarcity = bool(m.meta.get("uses_scarcity"))
    q = queue_arrays(snapshot, site, with_able=uses_scarcity)
    if not len(q["ids"]):
        return Decision((), SOURCE)
    total = float(sum(n.cpus for n in snapshot.nodes)) or float(q["procs"].max())
    scarce = scarcity_of(q["able"], total) if uses_scarcity else None
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
    """Group jobs into SetSiteFactor actions: one per band, one per whole hour waited past the age floor;
    highest SiteFactor first, job ids in the given order inside an action."""
    step = options.band_step
    floor = wait_s >= options.age_floor_s
    hours = np.minimum(np.maximum(wait_s, 0) // 3600, step - 1).astype(np.int64)
    value = np.where(floor, N_BANDS * step + hours, (N_BANDS - 1 - np.asarray(bands, dtype=np.int64)) * step)
    order = np.argsort(-value, kind="stable")
    uniq, first = np.unique(-value[order], return_index=True)
    out = []
    for v, chunk in zip((-uniq).tolist(), np.split(np.asarray(ids)[order], first[1:])):
        reason = (f"age floor: pending >= {options.age_floor_s / 3600:g} h" if v >= N_BANDS * step
                  else f"dqn band {N_BANDS - 1 - v // step} of {N_BANDS} (0 = first)")
        out.append(SetSiteFactor(tuple(chunk.tolist()), int(v), reason))
    return out
