"""The live guard: a cycle step that rolls the active policy back when it does worse live than its twin said.

A policy file written by ``hetsched tune`` carries a ``twin:`` section (:mod:`slurm_plugin.policy.twin`): the
metric it was chosen on (``objective``: ``avg_bsld`` or ``avg_wait_s``) and what the replay predicted for it.
Every cycle the guard folds the snapshot into its memory (:mod:`.guard_memory`: the jobs submitted since this
cycle first ran the policy, followed to their end) and :func:`judge` compares the live figure, a lower bound,
with the prediction. When live is behind by more than ``margin`` (relative; for waits also more than
``wait_slack_s``) over at least ``min_jobs`` jobs, the step decides one :class:`~slurm_plugin.decision.SwitchPolicy`
(cause ``POLICY_ROLLBACK``) to ``twin.previous`` (null: the default policy); the applier switches the file and
journals it, and the next cycle runs the policy it rolled back to (a fresh period: the memory follows the file's
digest, so a rollback is never repeated and survives a restart). A policy without ``twin:`` is never rolled back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..decision import Cause, Decision, SwitchPolicy
from ..policy.twin import TwinSection
from .guard_memory import GuardMemory, LiveOutcome, measure, observe
from .steps import CycleMemory, StepInputs, register_step

DEFAULT_MARGIN = 0.25
DEFAULT_MIN_JOBS = 20
DEFAULT_WAIT_SLACK_S = 60.0


@dataclass(frozen=True)
class GuardOptions:
    """When live is "behind": above ``predicted * (1 + margin)`` (for ``avg_wait_s`` also above ``predicted +
    wait_slack_s``: a few seconds of wait against a prediction of none is noise), over ``min_jobs`` jobs or more."""

    margin: float = DEFAULT_MARGIN
    min_jobs: int = DEFAULT_MIN_JOBS
    wait_slack_s: float = DEFAULT_WAIT_SLACK_S

    def __post_init__(self):
        if not self.margin >= 0 or self.min_jobs < 1 or not self.wait_slack_s >= 0:
            raise ValueError(f"guard options: margin >= 0, min_jobs >= 1, wait_slack_s >= 0 (got {self})")


@dataclass(frozen=True)
class Verdict:
    """``rollback`` or not, and why in words (both are shown by ``hetsched why policy``)."""

    rollback: bool
    reason: str


def judge(twin: TwinSection | None, live: LiveOutcome, options: GuardOptions) -> Verdict:
    """Roll back or keep (pure). The live figure is a lower bound, so "behind" is evidence, not noise of
    unfinished jobs; below ``min_jobs`` nothing is concluded."""
    if twin is None:
        return Verdict(False, "no twin section: the guard never rolls this policy back")
    metric, predicted = twin.objective, twin.predicted_value()
    value = live.get(metric)
    if value is None or live.jobs < options.min_jobs:
        return Verdict(False, f"{live.jobs} job(s) since it went live, {options.min_jobs} needed to judge "
                              f"{metric} (predicted {predicted:.4g})")
    limit = predicted * (1 + options.margin)
    if metric == "avg_wait_s":
        limit = max(limit, predicted + options.wait_slack_s)
    said = (f"live {metric} >= {value:.4g} over {live.jobs} job(s) ({live.ended} ended) vs twin predicted "
            f"{predicted:.4g} (limit {limit:.4g}: margin {options.margin:.0%})")
    return Verdict(value > limit, ("behind its twin: " if value > limit else "within its twin: ") + said)


@dataclass(frozen=True)
class GuardStep:
    """Watches the active policy file ``path`` (content digest ``sha256``, twin section ``twin``)."""

    path: str = ""
    sha256: str = ""
    twin: TwinSection | None = None
    options: GuardOptions = GuardOptions()
    name: str = "guard"

    def decide(self, inputs: StepInputs, memory: CycleMemory) -> tuple[Decision, CycleMemory]:
        guard = observe(memory.guard.watching(self.sha256, inputs.snapshot.taken_at), inputs.snapshot)
        live = measure(guard, inputs.snapshot.taken_at)
        verdict = judge(self.twin, live, self.options)
        guard = dataclasses.replace(guard, last={
            "t": inputs.now, "path": self.path, "objective": self.twin.objective if self.twin else None,
            "predicted": self.twin.predicted_value() if self.twin else None, **dataclasses.asdict(live),
            "rollback": verdict.rollback, "verdict": verdict.reason})
        memory = dataclasses.replace(memory, guard=guard)
        if not verdict.rollback:
            return Decision((), "guard"), memory
        to = self.twin.previous if self.twin else None
        reason = f"{verdict.reason}; back to {to or 'the default policy'}"
        return Decision((SwitchPolicy(self.path, to, self.sha256, reason, Cause.POLICY_ROLLBACK),), "guard"), memory


register_step("guard", GuardStep)
__all__ = ["GuardMemory", "GuardOptions", "GuardStep", "Verdict", "judge"]
