"""One packing step as the daemon cycle and the simulator both run it: pending jobs + group states -> moves.

The two callers differ only in where the inputs come from (a live :class:`~slurm_plugin.snapshot.Snapshot`, or
the simulator's arrays) and in how a :class:`Move` is applied (``scontrol update jobid=..`` or rewriting the
simulated job's allowed node groups); everything between is this function.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from .apply import decide_moves, problem_from_jobs
from .classes import GroupState, classes_from_site
from .model import Move, PackingParams, PackingResult, PendingJob, Pool

if TYPE_CHECKING:  # annotations only: the site schema (pydantic) and numpy load when used, not with this module
    from ..site import Site
    from .solver import MilpSolver

log = logging.getLogger(__name__)


def horizon_capacity(pools: Sequence[Pool], horizon: float) -> tuple[float, float, float]:
    """``horizon`` times the pools' whole capacity (free now plus every powered-down node booted): CPUs, memory
    (GB), accelerators."""
    return tuple(horizon * sum(p.free_now.as_tuple()[i] + p.down_nodes * p.per_node.as_tuple()[i] for p in pools)
                 for i in range(3))  # type: ignore[return-value]


def keep_within(needs: Iterable[tuple[float, float, float]], cap: tuple[float, float, float]) -> Iterator[bool]:
    """For each need in turn (most urgent first), whether it is kept: while, for each resource it asks for, the
    needs kept before it plus its own stay within ``cap``."""
    c0, c1, c2 = cap
    u0 = u1 = u2 = 0.0
    for n0, n1, n2 in needs:
        if (n0 <= 0 or u0 + n0 <= c0) and (n1 <= 0 or u1 + n1 <= c1) and (n2 <= 0 or u2 + n2 <= c2):
            u0, u1, u2 = u0 + n0, u1 + n1, u2 + n2
            yield True
        else:
            yield False


def plan_moves(jobs: Sequence[PendingJob], site: Site, states: Mapping[str, GroupState], time_cap_s: float,
               solver: MilpSolver | None = None,
               params: PackingParams | None = None) -> tuple[list[Move], PackingResult | None]:
    """Pack ``jobs`` (most urgent first) onto the site's node classes given each group's ``states``.

    Returns the moves (never one for a pinned job) and the packing result; ``([], None)`` without solving when
    no job is movable. ``solver`` defaults to :class:`HighspySolver` (the daemon's). The live cycle passes
    only the jobs within its horizon (:func:`keep_within` under :func:`horizon_capacity`, applied by
    ``cycle.inputs.packing_jobs`` before the jobs are built); the simulator packs every job."""
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
