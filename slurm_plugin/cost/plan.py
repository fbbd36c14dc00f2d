"""Choose a capacity plan: the cheapest whose performance is within ``max_loss`` of the performance-optimal one,
and write it where the power planner and the calendars read it.

``choose`` solves the performance-optimal plan (least job-hours, then least cost at that) and the chosen plan
(least cost with job-hours <= optimal / (1 - max_loss)). ``plan_document`` is the chosen plan as a site-file
fragment: ``policy.calendars`` with one calendar ``plan-<group>`` per node group whose nodes the plan turns off
for some hours (its windows are the hours with any node on, in UTC), plus ``plan.power``: per group and hour run
the nodes to keep on (what the planner's warm pool should hold then).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from .plan_milp import PlanMilp, PlanSolution
from .plan_model import HOUR, PlanInstance

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class PlanChoice:
    fast: PlanSolution  # performance-optimal
    chosen: PlanSolution
    max_loss: float
    ideal_job_hours: float
    attainable: dict

    def summary(self, inst: PlanInstance) -> dict:
        perf = lambda s: self.ideal_job_hours / s.job_hours if s.job_hours > 0 else 1.0  # noqa: E731
        return {
            "currency": inst.currency, "max_loss": self.max_loss,
            "performance_optimal": {"cost": round(self.fast.cost, 4), "job_hours": round(self.fast.job_hours, 4),
                                    "performance": round(perf(self.fast), 6), "node_hours_on":
                                        round(float(self.fast.on.sum()), 3)},
            "chosen": {"cost": round(self.chosen.cost, 4), "job_hours": round(self.chosen.job_hours, 4),
                       "performance": round(perf(self.chosen), 6), "gap": self.chosen.gap,
                       "node_hours_on": round(float(self.chosen.on.sum()), 3)},
            "cost_change_pct": round(100 * (self.chosen.cost / self.fast.cost - 1), 3) if self.fast.cost else 0.0,
            "performance_loss_pct": round(100 * (1 - perf(self.chosen) / perf(self.fast)), 3),
            "fixed_cost": round(inst.fixed_cost, 4), "qos_unattainable": self.attainable,
        }


def choose(inst: PlanInstance, max_loss: float = 0.05, time_limit_s: float = 60.0, rel_gap: float = 1e-4
           ) -> PlanChoice:
    if not 0 <= max_loss < 1:
        raise ValueError(f"max_loss {max_loss} must be in [0, 1)")
    milp = PlanMilp(inst)
    solve = lambda *a, **k: milp.solve(*a, time_limit_s=time_limit_s, rel_gap=rel_gap, **k)  # noqa: E731
    best = solve("job_hours")
    if best is None:
        raise RuntimeError("capacity plan: no plan serves the work (the MILP is infeasible)")
    fast = solve("cost", max_job_hours=best.job_hours * (1 + 1e-7) + 1e-7)
    chosen = solve("cost", max_job_hours=fast.job_hours / (1 - max_loss) + 1e-7)
    return PlanChoice(fast, chosen, max_loss, inst.ideal_job_hours(), milp.attainable)


def _windows(hours_on: np.ndarray, start: float) -> list[dict]:
    """Runs of on-hours as weekly windows (UTC); runs that cross midnight are split at it."""
    out = []
    for h in np.flatnonzero(hours_on):
        when = dt.datetime.fromtimestamp(start + h * HOUR, dt.timezone.utc)
        day, hh = DAYS[when.weekday()], when.hour
        end = "24:00" if hh == 23 else f"{hh + 1:02d}:00"
        if out and out[-1]["days"] == [day] and out[-1]["end"] == f"{hh:02d}:00":
            out[-1]["end"] = end
        else:
            out.append({"days": [day], "start": f"{hh:02d}:00", "end": end})
    return out


def plan_document(inst: PlanInstance, sol: PlanSolution) -> dict:
    """The plan as a site-file fragment (see the module docstring)."""
    calendars, power = [], {}
    for g, name in enumerate(inst.groups):
        on = sol.on[g]
        power[name] = [int(v) for v in on]
        if (on < inst.count[g]).any():
            windows = _windows(on > 0, inst.start)
            if windows:
                calendars.append({"name": f"plan-{name}"[:64], "timezone": "UTC", "windows": windows})
    return {"policy": {"calendars": calendars},
            "plan": {"start": dt.datetime.fromtimestamp(inst.start, dt.timezone.utc).isoformat(),
                     "hour_s": int(HOUR), "power": power}}
