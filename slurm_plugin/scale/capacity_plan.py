"""The hourly capacity plan of ``hetsched cost plan --output F`` as the power planner reads it (pure once loaded).

The plan's ``plan.power`` says, per node group and hour from ``plan.start``, how many nodes the cost/performance
optimum keeps on. The planner keeps at least that many of the group on (powered or booting) during that hour, as
a floor beside its own demand rule: the plan never holds back a node that pending work needs, and outside the
plan's hours (before its start, after its last hour) or for a group it does not name it changes nothing.
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


def load_capacity_plan(path: str | Path, groups: Mapping[str, int] | None = None) -> CapacityPlan:
    """The plan file at ``path`` (YAML or JSON). With ``groups`` (node group -> size), a group the site does not
    have, or more nodes than a group has, is an error naming the group."""
    from ..fsio import YamlFileError, read_yaml_file

    p = Path(path)
    try:
        doc = read_yaml_file(p, MAX_PLAN_BYTES, "a capacity plan")
    except YamlFileError as err:
        raise CapacityPlanError(str(err)) from None
    plan = plan_from_dict(doc, str(p))
    for group, hours in plan.power.items() if groups is not None else ():
        if group not in groups:
            raise CapacityPlanError(f"{p}: plan.power.{group}: no such node group (site has: {', '.join(groups)})")
        if max(hours, default=0) > groups[group]:
            raise CapacityPlanError(f"{p}: plan.power.{group}: {max(hours)} nodes on, the group has {groups[group]}")
    return plan

