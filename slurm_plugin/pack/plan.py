"""One packing step as the daemon cycle and the simulator both run it: pending jobs + group states -> moves.

The two callers differ only in where the inputs come from (a live :class:`~slurm_plugin.snapshot.Snapshot`, or
the simulator's arrays) and in how a :class:`Move` is applied (``scontrol update jobid=..`` or rewriting the
simulated job's allowed node groups); everything between is this function.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .apply import decide_moves, problem_from_jobs
from .classes import GroupState, classes_from_site
from .model import Move, PackingParams, PackingResult, PendingJob

if TYPE_CHECKING:  # annotations only: the site schema (pydantic) and numpy load when used, not with this module
    from ..site import Site
    from .solver import MilpSolver


def plan_moves(jobs: Sequence[PendingJob], site: Site, states: Mapping[str, GroupState], time_cap_s: float,
               solver: MilpSolver | None = None, params: PackingParams | None = None
               ) -> tuple[list[Move], PackingResult | None]:
    """Pack ``jobs`` (most urgent first) onto the site's node classes given each group's ``states``.

    Returns the moves (never one for a pinned job) and the packing result; ``([], None)`` without solving when
    no job is movable. ``solver`` defaults to :class:`HighspySolver` (the daemon's)."""
    if not any(not j.pinned for j in jobs):
        return [], None
    pools, classes = classes_from_site(site, states)
    problem = problem_from_jobs(jobs, pools, classes, params)
    from .solve import pack  # numpy (and highspy below) load when a packing runs, not with the cycle's modules

    if solver is None:
        from .highs_direct import HighspySolver

        solver = HighspySolver()
    result = pack(problem, solver, time_cap_s=time_cap_s)
    return decide_moves(jobs, problem, result), result
