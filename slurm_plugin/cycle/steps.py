"""Cycle steps: each decision the cycle makes is a :class:`CycleStep`, registered by name, run in order.

A step is a frozen value with typed arguments and one pure method, ``decide(inputs, memory) -> (Decision,
memory)``: it reads the snapshot, the site, the time and what earlier steps of this cycle decided
(``inputs.earlier``: the ranker's SiteFactor bands reach packing this way), and returns its actions and the
cycle memory for the next cycle (most steps return it unchanged). :func:`run_steps` runs steps in order, times
each (logged, and kept in ``Decision.timings``) and adds their decisions up. With a :class:`CycleBudget` it
tells each step the seconds it may take (``inputs.budget_s``: packing caps its MILP there) and skips the
optional steps (:data:`ESSENTIAL` are not) once the decide budget is spent: the cycle then applies what the
earlier steps decided (notes ``budget.skipped`` / ``budget.over`` say which). New capabilities add steps
(``register_step``), not branches in :func:`~.decide.decide`.

Built in: ``wipe`` (always first: the power cycle after sensitive work, :mod:`.wipe_step`), ``rank`` (a ranker's SiteFactor bands), ``pack`` (move flexible pending jobs), ``reshape``
(partitions by calendar), ``power`` (the scale planner).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..decision import Cause, Decision, MoveJob, SetSiteFactor
from ..pack.classes import classes_from_site
from ..pack.plan import horizon_capacity, plan_moves
from ..policy.spec import STEP_NAMES
from ..scale.planner import ScaleConfig, ScaleMemory, plan_power
from ..scale.reshape import plan_reshape
from ..snapshot import Snapshot
from .guard_memory import GuardMemory
from .inputs import group_states, packing_jobs

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site

log = logging.getLogger(__name__)
BANDS = 8
# A ranker: (snapshot, site, now) -> Decision of SetSiteFactor actions (e.g. the DQN's live ranker).
Ranker = Callable[[Snapshot, "Site", float], Decision]


@dataclass(frozen=True)
class CycleMemory:
    """What the next cycle must remember; each step reads and replaces its own part."""

    scale: ScaleMemory = field(default_factory=ScaleMemory)
    guard: GuardMemory = field(default_factory=GuardMemory)  # the live guard's (cycle/guard.py)
    site_factors: Mapping[int, int] = field(default_factory=dict)  # pending job -> SiteFactor the suite set
    wipe: Mapping[str, list[str]] = field(default_factory=dict)  # node -> [phase, job] (cycle/wipe_step.py)


ESSENTIAL = frozenset({"wipe", "power", "guard"})  # run even when the decide budget is spent
APPLY_SHARE = 0.9  # of what the read and the steps left of cycle_s, the applier's


@dataclass(frozen=True)
class CycleBudget:
    """Seconds the cycle's parts may take (None: unbounded): ``decide_s`` all steps together, ``steps_s`` each
    named step, ``apply_s`` the applier (:meth:`~slurm_plugin.decision.SlurmApplier.apply`'s ``budget_s``),
    ``cycle_s`` the whole cycle (the applier gets what is left of it: :meth:`apply_budget`)."""

    decide_s: float | None = None
    steps_s: Mapping[str, float] = field(default_factory=dict)
    apply_s: float | None = None
    cycle_s: float | None = None

    def apply_budget(self, used_s: float) -> float | None:
        """The applier's seconds after ``used_s`` seconds of reading and deciding (None: unbounded): of what is
        left of ``cycle_s``, :data:`APPLY_SHARE` (the rest covers the command that ends past its share and the
        state files written after the apply; on the 10,002-node site the whole share overran by 1 s)."""
        left = [b for b in (self.apply_s,
                            None if self.cycle_s is None else max(APPLY_SHARE * (self.cycle_s - used_s), 0.0))
                if b is not None]
        return min(left) if left else None

    def step_s(self, name: str, used_s: float) -> float | None:
        """What step ``name`` may take after ``used_s`` seconds of deciding (None: no bound)."""
        left = [b for b in (self.steps_s.get(name),
                            None if self.decide_s is None else max(self.decide_s - used_s, 0.0)) if b is not None]
        return min(left) if left else None


@dataclass(frozen=True)
class StepInputs:
    """What a step sees: the snapshot, the site, the time, the (step name, decision) of earlier steps, and the
    seconds it may take (``budget_s``; None: no bound)."""

    snapshot: Snapshot
    site: Site
    now: float
    earlier: tuple[tuple[str, Decision], ...] = ()
    budget_s: float | None = None

    def decided(self) -> Decision:
        """Everything earlier steps of this cycle decided, in order."""
        out = Decision()
        for _, d in self.earlier:
            out += d
        return out


class CycleStep(Protocol):
    """One decision of the cycle. ``decide`` is pure: it reads its arguments only."""

    name: str

    def decide(self, inputs: StepInputs, memory: CycleMemory) -> tuple[Decision, CycleMemory]: ...


def bands_from(decision: Decision) -> dict[int, int]:
    """Job id -> packing band 0..7 (7 most urgent) from the ranker's SiteFactor actions: the rank of the job's
    value among the distinct values set, spread evenly over the bands (lowest 0, highest 7)."""
    acts = [a for a in decision.actions if isinstance(a, SetSiteFactor)]
    values = sorted({a.site_factor for a in acts})
    top = max(len(values) - 1, 1)
    band = {v: round((BANDS - 1) * i / top) if len(values) > 1 else BANDS - 1 for i, v in enumerate(values)}
    return {j: band[a.site_factor] for a in acts for j in a.job_ids}


PACK_HORIZON = 2.0  # the live cycle packs the jobs that could start within 2x the capacity (pack/plan.py)


def pack_moves(snapshot: Snapshot, site: Site, bands: dict[int, int], time_cap_s: float,
               horizon: float | None = PACK_HORIZON) -> Decision:
    """MoveJob actions for flexible pending jobs (none for pinned ones, none when nothing is pending), among
    the most urgent jobs that could start within ``horizon`` x the capacity (:func:`~slurm_plugin.pack.plan.horizon_capacity`,
    cut by :func:`.inputs.packing_jobs`; None: all)."""
    states = group_states(snapshot, site)
    capacity = None if horizon is None else horizon_capacity(classes_from_site(site, states)[0], horizon)
    jobs = packing_jobs(snapshot, site, bands, capacity)
    moves, result = plan_moves(jobs, site, states, time_cap_s)
    if result is None:
        return Decision((), "pack")
    log.info("pack: %s objective %.1f (greedy %.1f) gap %.2f%% in %.3f s", result.status.value, result.objective,
             result.greedy_objective, 100 * (result.gap or 0), result.build_s + result.solve_s)
    return Decision(tuple(MoveJob(int(m.job_id), m.partition, "&".join(m.features),
                                  f"pack ({result.status.value}, gap {100 * (result.gap or 0):.1f}%): {m.reason}",
                                  Cause.PACKING)
                          for m in moves), "pack",
                    notes=(("pack.status", result.status.value), ("pack.gap", float(result.gap or 0.0))))


@dataclass(frozen=True)
class RankStep:
    """SiteFactor bands from ``ranker`` (None: no ranking; Slurm's own priority/multifactor decides)."""

    ranker: Ranker | None = None
    name: str = "rank"

    def decide(self, inputs: StepInputs, memory: CycleMemory) -> tuple[Decision, CycleMemory]:
        if self.ranker is None:
            return Decision((), "rank:off"), memory
        return self.ranker(inputs.snapshot, inputs.site, inputs.now), memory


@dataclass(frozen=True)
class PackStep:
    """Move flexible pending jobs, most urgent first by the bands earlier steps set (0 for unranked jobs)."""

    time_cap_s: float = 1.0
    name: str = "pack"

    def decide(self, inputs: StepInputs, memory: CycleMemory) -> tuple[Decision, CycleMemory]:
        bands = bands_from(inputs.decided())
        cap = self.time_cap_s if inputs.budget_s is None else max(min(self.time_cap_s, inputs.budget_s), 0.05)
        return pack_moves(inputs.snapshot, inputs.site, bands, cap), memory


@dataclass(frozen=True)
class ReshapeStep:
    """Partitions by the site's calendars (``policy.reshapes``)."""

    name: str = "reshape"

    def decide(self, inputs: StepInputs, memory: CycleMemory) -> tuple[Decision, CycleMemory]:
        when = dt.datetime.fromtimestamp(inputs.now, dt.timezone.utc)
        return plan_reshape(inputs.snapshot, inputs.site, when), memory


@dataclass(frozen=True)
class PowerStep:
    """Nodes up and down (:func:`~slurm_plugin.scale.planner.plan_power`); keeps the scale memory."""

    scale: ScaleConfig = field(default_factory=ScaleConfig)
    name: str = "power"

    def decide(self, inputs: StepInputs, memory: CycleMemory) -> tuple[Decision, CycleMemory]:
        power, scale = plan_power(inputs.snapshot, inputs.site, self.scale, memory.scale, inputs.now)
        return power, dataclasses.replace(memory, scale=scale)


# name -> factory(**typed args): every step, in one place
STEPS: dict[str, Callable[..., CycleStep]] = {"rank": RankStep, "pack": PackStep, "reshape": ReshapeStep,
                                               "power": PowerStep}


def register_step(name: str, factory: Callable[..., CycleStep]) -> None:
    """Add a step; a policy file's ``steps:`` may then name it (:data:`slurm_plugin.policy.spec.STEP_NAMES`)."""
    STEPS[name] = factory
    if name not in STEP_NAMES:
        STEP_NAMES.append(name)


# steps built in but registered by their own modules (register_step), imported when the first step is made
_SELF_REGISTERING = (".dag_step", ".guard")


def make_step(name: str, **args) -> CycleStep:
    """The step registered as ``name`` with ``args``; ValueError lists the valid names (and arguments)."""
    for module in _SELF_REGISTERING:
        importlib.import_module(module, __package__)
    if name not in STEPS:
        raise ValueError(f"unknown cycle step '{name}' (valid: {', '.join(sorted(STEPS))})")
    factory = STEPS[name]
    if dataclasses.is_dataclass(factory):
        valid = [f.name for f in dataclasses.fields(factory) if f.name != "name"]
        bad = sorted(set(args) - set(valid))
        if bad:
            raise ValueError(f"cycle step '{name}': unknown argument(s) {', '.join(bad)} "
                             f"(valid: {', '.join(valid) or 'none'})")
    return factory(**args)


def run_steps(steps: tuple[CycleStep, ...] | list[CycleStep], snapshot: Snapshot, site: Site, memory: CycleMemory,
              now: float, budget: CycleBudget | None = None,
              clock: Callable[[], float] = time.perf_counter) -> tuple[Decision, CycleMemory]:
    """Every step in order, each seeing what the earlier ones decided; one Decision with each step's time.
    With ``budget``: each step is told its seconds, and a step that is not :data:`ESSENTIAL` is skipped once
    the decide budget is spent (its memory unchanged; note ``budget.skipped``); a step over its own budget is
    noted ``budget.over`` (a step is not stopped midway: its result stands)."""
    earlier: list[tuple[str, Decision]] = []
    decision = Decision()
    start = clock()
    for step in steps:
        allowed = None if budget is None else budget.step_s(step.name, clock() - start)
        if allowed is not None and allowed <= 0 and step.name not in ESSENTIAL:
            log.warning("step %s skipped: decide budget of %g s spent", step.name, budget.decide_s)
            got = Decision((), f"{step.name}:skipped", notes=(("budget.skipped", step.name),))
            earlier.append((step.name, got))
            decision += got
            continue
        t0 = clock()
        got, memory = step.decide(StepInputs(snapshot, site, now, tuple(earlier), allowed), memory)
        took = clock() - t0
        log.info("step %s: %d action(s) in %.3f s", step.name, len(got.actions), took)
        over = budget is not None and budget.steps_s.get(step.name) is not None and took > budget.steps_s[step.name]
        if over:
            log.warning("step %s took %.3f s, over its budget of %g s", step.name, took, budget.steps_s[step.name])
        got = dataclasses.replace(got, timings=((step.name, took),),
                                  notes=got.notes + ((("budget.over", step.name),) if over else ()))
        earlier.append((step.name, got))
        decision += got
    return decision, memory
