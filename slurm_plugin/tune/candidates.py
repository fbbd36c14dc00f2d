"""The ranking candidates the twin replays: every fixed heuristic, the shipped DQN and the site's multifactor,
each with and without the age floor, and the parametric ``weighted`` family searched on the tuning part.

A candidate is a :class:`~slurm_plugin.policy.RankingSpec`, so what the twin simulates is what runs live
(:func:`slurm_plugin.sim.policy.sim_ranking`, :func:`slurm_plugin.cycle.policy.live_ranker`).
``complexity`` orders candidates for the tie-break (simpler wins within noise): FCFS, then SJF and Slurm's
multifactor, then the one-formula heuristics, then the fitted family, then the learned ranking.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..policy import RankingSpec

FIXED = ("fcfs", "sjf", "wfp3", "unicep", "f1", "multifactor", "dqn")
COMPLEXITY = {"fcfs": 0, "sjf": 1, "multifactor": 1, "f1": 2, "wfp3": 2, "unicep": 2, "weighted": 3, "dqn": 4}
# the weighted family's grid (w_estimate = 1: only the ratios matter): size exponent x age exponent.
# (0, 0) is SJF, (-1/3, 1) is WFP3's order; w_age > 0 ages jobs, w_size > 0 favours small jobs.
GRID_SIZE = (-0.5, 0.0, 0.5, 1.0)
GRID_AGE = (0.0, 0.25, 0.5, 1.0, 2.0)


@dataclass(frozen=True)
class Candidate:
    spec: RankingSpec
    family: str  # "fixed" (a named heuristic, the DQN, multifactor), "weighted" or "finetuned" (.finetuned)

    @property
    def label(self) -> str:
        return label(self.spec)

    @property
    def complexity(self) -> float:
        return float(COMPLEXITY[self.spec.name]) + (1.0 if self.family == "finetuned" else 0.0)


def label(spec: RankingSpec) -> str:
    """``sjf``, ``sjf+floor``, ``weighted(size=0.5,age=1)+floor``, ``dqn-finetuned`` (the tuner's fine-tuned
    model, whatever the file's date), ``dqn(name)`` (another model file): what tables and JSON call a ranking."""
    name = spec.name
    if name == "dqn" and spec.model:
        stem = Path(spec.model).name.removesuffix(".npz")
        name = "dqn-finetuned" if stem.startswith("dqn-finetuned") else f"dqn({stem})"
    if name == "weighted":
        name = f"weighted(est={spec.w_estimate:g},size={spec.w_size:g},age={spec.w_age:g})"
    return name + ("+floor" if spec.age_floor else "")


def fixed_candidates(floor_hours: float = 24.0, names: tuple[str, ...] = FIXED) -> list[Candidate]:
    """Every fixed ranking in ``names``, without and with the age floor (``floor_hours``)."""
    return [Candidate(RankingSpec(name=n, age_floor=f, age_floor_hours=floor_hours), "fixed")
            for n in names for f in (False, True)]


def weighted_grid(floor_hours: float = 24.0, sizes=GRID_SIZE, ages=GRID_AGE) -> list[Candidate]:
    """The weighted family's grid (without the age floor: the fitted member is then tried with it too)."""
    return [Candidate(RankingSpec(name="weighted", w_estimate=1.0, w_size=float(s), w_age=float(a), age_floor=False,
                                  age_floor_hours=floor_hours), "weighted")
            for s in sizes for a in ages]


def with_floor(c: Candidate) -> Candidate:
    return Candidate(replace(c.spec, age_floor=True), c.family)


def shipped_default(floor_hours: float = 24.0) -> RankingSpec:
    """What a site runs without tuning: the policy spec's default ranking."""
    return replace(RankingSpec(), age_floor_hours=floor_hours)
