"""The capacity plan a policy names (``scaling.capacity_plan``), read for the planner live and simulated."""

from __future__ import annotations

from ..scale.capacity_plan import CapacityPlan, CapacityPlanError, load_capacity_plan
from .errors import PolicyError


def policy_plan(path: str | None) -> CapacityPlan | None:
    """The plan at ``path``, read (None: none); a bad file raises :class:`PolicyError` at
    ``scaling.capacity_plan`` naming the file and the field."""
    if path is None:
        return None
    try:
        return load_capacity_plan(path)
    except CapacityPlanError as err:
        raise PolicyError("scaling.capacity_plan", str(err)) from None
