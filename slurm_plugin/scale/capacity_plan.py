"""The hourly capacity plan of ``hetsched cost plan --output F`` as the power planner reads it (pure once loaded).

The plan's ``plan.power`` says, per node group and hour from ``plan.start``, how many nodes the cost/performance
optimum keeps on. The planner keeps at least that many of the group on (powered or booting) during that hour, as
a floor beside its own demand rule: the plan never holds back a node that pending work needs, and outside the
plan's hours (before its start, after its last hour) or for a group it does not name it changes nothing. A plan
naming a group the site does not have is refused wherever a policy's plan is read (:func:`check_plan_groups`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MAX_PLAN_BYTES = 8 << 20


class CapacityPlanError(ValueError):
    """A plan file that cannot be read: says which file and which field."""


@dataclass(frozen=True)
class CapacityPlan:
    start: float  # epoch seconds of hour 0
    hour_s: float
    power: Mapping[str, tuple[int, ...]]  # group -> nodes on, per hour
    source: str = "<plan>"

    def nodes_on(self, group: str, now: float) -> int | None:
        """The plan's nodes on for ``group`` at ``now``, or None (no such group, or ``now`` outside the plan)."""
        hours = self.power.get(group)
        if hours is None or now < self.start:
            return None
        h = int((now - self.start) // self.hour_s)
        return hours[h] if h < len(hours) else None

    def why(self, group: str, now: float) -> str:
        """The reason text for the floor at ``now``."""
        h = int((now - self.start) // self.hour_s)
        return f"capacity plan {Path(self.source).name} hour {h}: {self.nodes_on(group, now)} on"


def plan_from_dict(doc, source: str = "<plan>") -> CapacityPlan:
    """A plan from the parsed ``cost plan --output`` document; :class:`CapacityPlanError` names ``source`` and
    the field."""
    def bad(where: str, what: str) -> CapacityPlanError:
        return CapacityPlanError(f"{source}: {where}: {what}")

    plan = doc.get("plan") if isinstance(doc, Mapping) else None
    if not isinstance(plan, Mapping):
        raise bad("plan", "missing: expected the document `hetsched cost plan --output` writes")
    try:
        start = dt.datetime.fromisoformat(str(plan.get("start"))).timestamp()
    except ValueError:
        raise bad("plan.start", f"not an ISO-8601 time: {plan.get('start')!r}") from None
    hour_s = plan.get("hour_s", 3600)
    if isinstance(hour_s, bool) or not isinstance(hour_s, (int, float)) or hour_s <= 0:
        raise bad("plan.hour_s", f"must be a positive number (got {hour_s!r})")
    power = plan.get("power")
    if not isinstance(power, Mapping) or not power:
        raise bad("plan.power", "expected a mapping of node group -> nodes on per hour")
    out = {}
    for group, hours in power.items():
        if not isinstance(hours, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                                  for n in hours):
            raise bad(f"plan.power.{group}", "expected a list of non-negative integers (nodes on per hour)")
        out[str(group)] = tuple(hours)
    return CapacityPlan(start, float(hour_s), out, source)


def check_plan_groups(plan: CapacityPlan, groups: Mapping[str, int]) -> CapacityPlan:
    """``plan`` if every group it names is one of ``groups`` (node group -> size) with no more nodes on than the
    group has; else :class:`CapacityPlanError` naming the plan file, the line of the group's entry and the
    site's groups."""
    from ..fsio import yaml_line

    for group, hours in plan.power.items():
        if group in groups and max(hours, default=0) <= groups[group]:
            continue
        line = yaml_line(plan.source, ("plan", "power", group))
        where = f"{plan.source}:{line}" if line is not None else plan.source
        if group not in groups:
            raise CapacityPlanError(f"{where}: plan.power.{group}: no such node group in the site (its groups: "
                                    f"{', '.join(groups) or 'none'})")
        raise CapacityPlanError(f"{where}: plan.power.{group}: {max(hours)} nodes on, the group has {groups[group]}")
    return plan


def load_capacity_plan(path: str | Path, groups: Mapping[str, int] | None = None) -> CapacityPlan:
    """The plan file at ``path`` (YAML or JSON). With ``groups`` (node group -> size), checked against them
    (:func:`check_plan_groups`)."""
    from ..fsio import YamlFileError, read_yaml_file

    p = Path(path)
    try:
        doc = read_yaml_file(p, MAX_PLAN_BYTES, "a capacity plan")
    except YamlFileError as err:
        raise CapacityPlanError(str(err)) from None
    plan = plan_from_dict(doc, str(p))
    return plan if groups is None else check_plan_groups(plan, groups)
