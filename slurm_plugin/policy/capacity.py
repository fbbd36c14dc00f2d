"""The capacity plan a policy names (``scaling.capacity_plan``), read for the planner live and simulated, and
always checked against the site's node groups it will run on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..scale.capacity_plan import CapacityPlan, CapacityPlanError, load_capacity_plan
from .errors import PolicyError


def group_sizes(groups: Iterable) -> dict[str, int]:
    """Node group -> nodes, from a site's ``node_groups`` or a simulated machine's ``groups`` (``name``, ``count``)."""
    return {g.name: g.count for g in groups}


def policy_plan(path: str | None, groups: Mapping[str, int] | None) -> CapacityPlan | None:
    """The plan at ``path``, read and checked against ``groups`` (node group -> size, :func:`group_sizes`: the
    site's); None: no plan. A bad file, or one naming a group the site does not have (or more nodes than it has),
    raises :class:`PolicyError` at ``scaling.capacity_plan`` naming the file, the line and the site's groups.
    A plan is never read unchecked: ``groups`` None with a plan is a :class:`ValueError`."""
    if path is None:
        return None
    if groups is None:
        raise ValueError(f"capacity plan {path}: read without the site's node groups to check it against")
    try:
        return load_capacity_plan(path, groups)
    except CapacityPlanError as err:
        raise PolicyError("scaling.capacity_plan", str(err)) from None
