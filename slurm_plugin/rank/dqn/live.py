"""The live ranker: the pending jobs of a cluster snapshot -> one SiteFactor action per distinct value.

``rank_pending(snapshot, model, site, now)`` is pure (no Slurm call). Per pending job it computes the DQN's
features, the greedy band b and the learned score ``log10(limit) + DELTA x b`` (:func:`.policy.band_scores`,
the simulator's order), quantised to a *level* 0..LEVELS-1 (higher = sooner, one level = DELTA decades of
time limit). SiteFactor is then composed in this one place from the snapshot's current values:

    site_factor = policy_band x LEVELS x level_step + level x level_step     (level_step = ``band_step``)

(:func:`slurm_plugin.admission.classify.band_site_factor`: admission sets the same value at level 0 at submit,
so a new job and a ranked one are on one scale)

where ``policy_band`` is admission's class/tier band of the job (:func:`slurm_plugin.admission.classify`
on its owner uid, qos, comment tags, wckey, account: only what the owner is entitled to, docs/trust.md; 0
without a site). So the site's tiers and classes dominate (a
gold job stays ahead of every silver job, as admission promised) and the model orders jobs inside one
class and tier; inside one level Slurm's own factors (age, size, QoS) decide. Jobs pending ``age_floor_s`` or
more get the age floor instead: ``(top policy band + 1) x LEVELS x level_step + hours waited``, above every
band, oldest first, so no job starves (Slurm 22.05 without slurmdbd ignores PriorityWeightAge). Jobs with one
value share one action (the applier turns it into one ``scontrol update jobid=a,b,c sitefactor=N`` per 500
jobs). ``shadow=True`` logs what it would set and returns no action. A missing or corrupt model gives the
fallback: no action (plain multifactor) and one warning line naming the file and the error.

Example (level_step 100, LEVELS 40): a bronze (band 0) 1 h job in DQN band 0 scores log10(3600) = 3.56, level
rint((9.75 - 3.56) / 0.25) = 25, SiteFactor 2500; the same job in tier silver (band 500) gets
500 x 4000 + 2500 = 2,002,500; on the demo site (top band 1030) a job pending 30 h gets 4,124,030.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...admission.classify import LEVEL_STEP, RANK_LEVELS, band_site_factor, classify, top_band
from ...admission.request import JobRequest
from ...admission.trust import Accounting
from ...decision import Cause, Decision, SetSiteFactor
from ...snapshot.constraint import constraint_matches
from ...snapshot.model import Snapshot
from .features import job_features, scarcity_of
from .model import DqnModel, ModelError, load_model
from .policy import DELTA, band_scores

log = logging.getLogger(__name__)
DEFAULT_AGE_FLOOR_S = 24 * 3600.0
DEFAULT_BAND_STEP = LEVEL_STEP  # SiteFactor per level (admission assumes this one)
LEVELS = RANK_LEVELS  # levels of the learned score: DELTA decades each, from SCORE_TOP down
SCORE_TOP = 9.75  # scores at or above this (limits of years in band 7) share level 0
DEFAULT_LIMIT_S = 86400.0  # a job without a time limit (and partition without MaxTime) counts as one day
SOURCE = "rank:dqn"


@dataclass(frozen=True)
class RankOptions:
    """How the live ranker maps levels to SiteFactor (``band_step`` per level); ``shadow`` only logs;
    ``accounting``: what slurmctld validates (which ``--qos``/``--account`` grant a tier/class)."""

    age_floor_s: float = DEFAULT_AGE_FLOOR_S
    band_step: int = DEFAULT_BAND_STEP
    shadow: bool = False
    accounting: Accounting = Accounting()


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


def queue_arrays(snapshot: Snapshot, site=None, with_able: bool = True,
                 accounting: Accounting = Accounting()) -> dict[str, np.ndarray]:
    """The pending jobs of ``snapshot`` but the held ones as arrays: ids, submit, limit (s), procs, qos (the priority of each
    job's granted tier, 0 without a site), policy (the admission band of each job's granted class/tier, 0
    without a site), and (when ``with_able``) the cores of nodes able to run each job (each computed once
    per distinct ask). Class and tier come from :func:`classify` on the job's owner and the fields Slurm keeps,
    so a comment a user edits after submission can never raise them (docs/trust.md)."""
    pend = [j for j in snapshot.jobs if j.state == "PENDING" and not j.held]
    n = len(pend)
    policy, qos = _policy_bands(pend, site, accounting)
    out = {
        "ids": np.fromiter((j.job_id for j in pend), np.int64, n),
        "submit": np.fromiter((j.submit_time or snapshot.taken_at for j in pend), float, n),
        "limit": np.fromiter((j.time_limit_min or 0 for j in pend), float, n) * 60.0,
        "procs": np.fromiter((j.cpus or j.node_count or 1 for j in pend), float, n),
        "qos": qos,
        "policy": policy,
    }
    unset = np.flatnonzero(out["limit"] <= 0)
    out["limit"][unset] = [_limit_s(snapshot, pend[i]) for i in unset]
    if with_able:
        able_of: dict[tuple, float] = {}
        for k in {(j.features, j.gres) for j in pend}:
            kinds = tuple((g.name, g.type) for g in k[1])
            able_of[k] = float(sum(node.cpus for node in snapshot.nodes if _can_run(node, k[0], kinds)))
        out["able"] = np.fromiter((able_of[(j.features, j.gres)] for j in pend), float, n)
    return out


def _policy_bands(pend: list, site, accounting: Accounting) -> tuple[np.ndarray, np.ndarray]:
    """(admission band, granted tier priority) of each job: :func:`classify` on its owner, qos, comment,
    wckey and account (what admission read), one call per distinct combination."""
    if site is None:
        return np.zeros(len(pend)), np.zeros(len(pend))
    memo: dict[tuple, tuple[int, int]] = {}
    band, qos = np.empty(len(pend)), np.empty(len(pend))
    for i, j in enumerate(pend):
        key = (j.qos, j.comment, j.wckey, j.account, j.user_id)
        if key not in memo:
            req = JobRequest(qos=j.qos or None, comment=j.comment or None, wckey=j.wckey or None,
                             account=j.account or None, user_id=j.user_id)
            c = classify(req, site, accounting)
            memo[key] = (c.band, c.tier.priority if c.tier else 0)
        band[i], qos[i] = memo[key]
    return band, qos


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
    q = queue_arrays(snapshot, site, with_able=uses_scarcity, accounting=options.accounting)
    if not len(q["ids"]):
        return Decision((), SOURCE)
    total = float(sum(n.cpus for n in snapshot.nodes)) or float(q["procs"].max())
    scarce = scarcity_of(q["able"], total) if uses_scarcity else None
    max_qos = max([t.priority for t in site.policy.qos_tiers] or [0]) if site is not None else None
    x = job_features(q["submit"], q["limit"], q["procs"], q["qos"], now, total, scarce, max_qos or None)
    top = top_band(site) if site is not None else 0
    actions = level_actions(q["ids"], levels(q["limit"], m.bands(x)), q["policy"], now - q["submit"], top, options)
    if options.shadow:
        for a in actions:
            log.info("rank (shadow): would set sitefactor=%d on %d job(s) [%s]: %s", a.site_factor,
                     len(a.job_ids), a.reason, ",".join(map(str, a.job_ids[:20])))
        return Decision((), SOURCE + ":shadow")
    return Decision(tuple(actions), SOURCE)


def levels(limit: np.ndarray, bands: np.ndarray) -> np.ndarray:
    """The learned score quantised: rint((SCORE_TOP - band_scores) / DELTA) in 0..LEVELS-1, higher = sooner."""
    return score_to_level(band_scores(limit, bands))


def score_to_level(scores: np.ndarray) -> np.ndarray:
    """:func:`levels` of scores already computed (the simulator's DQN scores, at the live resolution)."""
    lv = np.rint((SCORE_TOP - np.asarray(scores, dtype=float)) / DELTA)
    return np.clip(lv, 0, LEVELS - 1).astype(np.int64)


def level_actions(ids: np.ndarray, level: np.ndarray, policy: np.ndarray, wait_s: np.ndarray, top_policy: int,
                  options: RankOptions, ranking: str = "dqn") -> list[SetSiteFactor]:
    """SetSiteFactor actions, one per distinct value (see the module docstring for the value), highest
    first, job ids in the given order inside an action; ``ranking`` names the levels' source in the reason."""
    step = options.band_step
    span = LEVELS * step  # one policy band unit is worth more than every level
    floor = wait_s >= options.age_floor_s
    base = band_site_factor(int(top_policy) + 1, level_step=step)  # the age floor: above every band
    hours = np.minimum(np.maximum(wait_s, 0) // 3600, span - 1).astype(np.int64)
    lv = np.asarray(level, dtype=np.int64)
    value = np.where(floor, base + hours, np.asarray(policy, dtype=np.int64) * span + lv * step)  # band_site_factor
    order = np.argsort(-value, kind="stable")
    uniq, first = np.unique(-value[order], return_index=True)
    out = []
    for v, chunk in zip((-uniq).tolist(), np.split(np.asarray(ids)[order], first[1:])):
        if v >= base:
            reason, cause = f"age floor: pending >= {options.age_floor_s / 3600:g} h", Cause.AGE_FLOOR
        else:
            reason = f"policy band {v // span}, {ranking} level {(v % span) // step} of {LEVELS} (higher = sooner)"
            cause = Cause.RANKING
        out.append(SetSiteFactor(tuple(chunk.tolist()), int(v), reason, cause))
    return out
