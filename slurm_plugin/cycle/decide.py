"""One cycle's decision, as a pure function of the snapshot, the site and what the last cycle remembered.

The cycle is a list of steps (:mod:`.steps`); :class:`CycleConfig` picks the usual ones and their order
(``steps``; by default rank (priority bands as SiteFactor) -> pack (move flexible pending jobs, using those
bands) -> reshape (partitions by calendar) -> power (nodes up/down); a policy file's ``steps:`` sets it).
Each step's actions carry their own reasons; a step that is switched off is not run. A policy file
(:mod:`slurm_plugin.policy`) makes the same config through :mod:`.policy`. A last guard
(:func:`one_power_action_per_node`) makes sure no node gets two power actions in one cycle (never POWER_UP and
POWER_DOWN together), :func:`held_jobs_left_alone` takes every held job out of the job actions (whichever step
named it: a job its owner or an admin held is never re-prioritised, moved or released),
:func:`unchanged_site_factors_dropped` leaves out the SiteFactors a job already has from the suite (each is one
slurmctld RPC per job: 20,000 pending jobs re-ranked to the same bands cost 20,000 job updates a cycle), and
:func:`addressed` names a pending array's record to Slurm as ``123_[4-100]``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..decision import Decision, MoveJob, PowerNodes, SetSiteFactor
from ..decision.applier import MAX_ID_LIST_CHARS
from ..policy.spec import DEFAULT_STEPS
from ..scale.planner import ScaleConfig
from ..snapshot import Snapshot
from .steps import (BANDS, CycleBudget, CycleMemory, CycleStep, PackStep, PowerStep, Ranker, RankStep, ReshapeStep,
                    bands_from, make_step, pack_moves, run_steps)
from .wipe_step import WipeStep

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site

log = logging.getLogger(__name__)
__all__ = ["BANDS", "CycleBudget", "CycleConfig", "CycleMemory", "Ranker", "bands_from", "cycle_steps", "decide",
           "pack_moves"]


@dataclass(frozen=True)
class CycleConfig:
    pack: bool = True
    reshape: bool = True
    power: bool = True
    pack_time_cap_s: float = 1.0
    scale: ScaleConfig = field(default_factory=ScaleConfig)
    steps: tuple[str, ...] = DEFAULT_STEPS  # the order; a name beyond the built-ins is made by the registry
    guard: CycleStep | None = None  # the live guard (cycle/guard.py), last; None: no policy file is watched
    wipe: bool = True  # the power cycle after sensitive work (cycle/wipe_step.py), first; not a policy choice
    budget: CycleBudget | None = None  # per-step and apply time budgets (steps.CycleBudget); None: unbounded


def cycle_steps(config: CycleConfig, ranker: Ranker | None = None) -> tuple[CycleStep, ...]:
    """The wipe step first (unless ``config.wipe`` is off), then the steps ``config`` switches on, in
    ``config.steps`` order (the rank step runs whenever it is listed: 'rank:off' without a ranker; a registered
    step beyond the built-ins is made with no arguments), then the guard, always last."""
    built: dict[str, CycleStep | None] = {
        "rank": RankStep(ranker), "pack": PackStep(config.pack_time_cap_s) if config.pack else None,
        "reshape": ReshapeStep() if config.reshape else None,
        "power": PowerStep(config.scale) if config.power else None}
    steps = [built[name] if name in built else make_step(name) for name in config.steps]
    return tuple(s for s in [WipeStep() if config.wipe else None, *steps, config.guard] if s is not None)


def one_power_action_per_node(decision: Decision) -> Decision:
    """``decision`` with at most one power action per node: the first one stands (remediation comes before
    the groups' plans); a later one loses that node, and an action left without nodes is dropped (logged)."""
    claimed: dict[str, str] = {}
    kept = []
    for action in decision.actions:
        if isinstance(action, PowerNodes):
            clash = [n for n in action.nodes if n in claimed]
            if clash:
                log.warning("guard: %s of %s dropped: already %s this cycle", action.action, ",".join(clash),
                            "/".join(sorted({claimed[n] for n in clash})))
                action = replace(action, nodes=tuple(n for n in action.nodes if n not in claimed))
                if not action.nodes:
                    continue
            claimed.update((n, action.action) for n in action.nodes)
        kept.append(action)
    return replace(decision, actions=tuple(kept))


def decide(snapshot: Snapshot, site: Site, config: CycleConfig, memory: CycleMemory, now: float,
           ranker: Ranker | None = None) -> tuple[Decision, CycleMemory]:
    """Everything this cycle does, and what the next cycle must remember."""
    decision, memory = run_steps(cycle_steps(config, ranker), snapshot, site, memory, now, config.budget)
    decision = unnameable_records_left_alone(held_jobs_left_alone(decision, snapshot), snapshot)
    decision, site_factors = unchanged_site_factors_dropped(decision, memory.site_factors, snapshot)
    return addressed(one_power_action_per_node(decision), snapshot), replace(memory, site_factors=site_factors)


def addressed(decision: Decision, snapshot: Snapshot) -> Decision:
    """``decision`` with each job action carrying how Slurm must be told the jobs it names that are not told by
    their id alone (:attr:`~slurm_plugin.snapshot.JobState.slurm_id`: a pending array's record, ``123_[4-100]``,
    changes that record only; ``123`` would change every task of the array), and an array task with a record
    of its own as ``123_7``, so the applier names many tasks of one array in one RPC
    (:func:`~slurm_plugin.decision.applier.array_grouped`)."""
    refs = _array_refs(snapshot)
    if not refs:
        return decision
    out = []
    for action in decision.actions:
        if isinstance(action, (SetSiteFactor, MoveJob)):
            ids = action.job_ids if isinstance(action, SetSiteFactor) else (action.job_id,)
            found = tuple((j, refs[j]) for j in ids if j in refs)
            if found:
                action = replace(action, addresses=found)
        out.append(action)
    return replace(decision, actions=tuple(out))


def _array_refs(snapshot: Snapshot) -> dict[int, str]:
    """Job id -> how ``scontrol update jobid=`` names it, for the array records not named by their id alone."""
    refs = snapshot.memo("cycle.slurm_ids", lambda: {j.job_id: _task_ref(j) for j in snapshot.jobs
                                                      if j.array_job_id is not None})
    return {j: ref for j, ref in refs.items() if ref != str(j)}


def _task_ref(job) -> str:
    """:attr:`slurm_id`, except that a task of an array with a record of its own is ``<array id>_<task>``."""
    if not job.array_tasks and job.array_task_id is not None and job.array_job_id != job.job_id:
        return f"{job.array_job_id}_{job.array_task_id}"
    return job.slurm_id


def held_jobs_left_alone(decision: Decision, snapshot: Snapshot) -> Decision:
    """``decision`` without any SiteFactor or move of a job ``snapshot`` shows held (``JobState.held``); an
    action left without jobs is dropped. Logged: a step that names a held job has a bug to fix."""
    return _left_alone(decision, {j.job_id for j in snapshot.jobs if j.held}, "held")


def unnameable_records_left_alone(decision: Decision, snapshot: Snapshot) -> Decision:
    """``decision`` without any SiteFactor or move of a pending array record whose task list no scontrol
    argument takes (a stepped array of tens of thousands of tasks, ``1-99999:2``: scontrol takes the record only
    as its task list without the step, and Linux no argument over 128 KiB). Such a record is left as it is:
    naming a subset of its tasks would make slurmctld split each into a record of its own, and the array's id
    alone would change its tasks that run or ended too. Before the cycle's memory, so nothing counts as set."""
    too_long = {j: len(ref) for j, ref in _array_refs(snapshot).items() if len(ref) > MAX_ID_LIST_CHARS}
    if not too_long:
        return decision
    why = (f"its pending array record's task list is {', '.join(f'{n:,}' for n in sorted(set(too_long.values())))} "
           f"characters, more than one scontrol argument takes ({MAX_ID_LIST_CHARS:,})")
    return _left_alone(decision, set(too_long), why)


def _left_alone(decision: Decision, jobs: set[int], why: str) -> Decision:
    """``decision`` without the SiteFactor settings and moves of ``jobs`` (logged with ``why``); an action left
    without jobs is dropped."""
    if not jobs:
        return decision
    kept = []
    for action in decision.actions:
        if isinstance(action, SetSiteFactor) and jobs.intersection(action.job_ids):
            log.warning("guard: SiteFactor %d not set on job(s) %s: %s", action.site_factor,
                        ",".join(str(j) for j in action.job_ids if j in jobs), why)
            action = replace(action, job_ids=tuple(j for j in action.job_ids if j not in jobs))
            if not action.job_ids:
                continue
        elif isinstance(action, MoveJob) and action.job_id in jobs:
            log.warning("guard: job %d not moved to %s: %s", action.job_id, action.partition or action.features, why)
            continue
        kept.append(action)
    return replace(decision, actions=tuple(kept))


def unchanged_site_factors_dropped(decision: Decision, applied: Mapping[int, int], snapshot: Snapshot
                                   ) -> tuple[Decision, dict[int, int]]:
    """``decision`` without the SiteFactor settings a pending job already got from an earlier cycle
    (``applied``; an action left without jobs is dropped), and what to remember next: the value set last for
    each job still pending. A job's SiteFactor stays on the job in slurmctld, so setting it again changes
    nothing; the steps still see every band (packing reads them before this pass)."""
    pending = {j.job_id for j in snapshot.jobs if j.pending}
    remember = {j: v for j, v in applied.items() if j in pending}
    kept = []
    for action in decision.actions:
        if isinstance(action, SetSiteFactor):
            new = tuple(j for j in action.job_ids if remember.get(j) != action.site_factor)
            remember.update((j, action.site_factor) for j in action.job_ids if j in pending)
            if not new:
                continue
            if len(new) < len(action.job_ids):
                action = replace(action, job_ids=new)
        kept.append(action)
    return replace(decision, actions=tuple(kept)), remember
