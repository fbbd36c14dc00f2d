"""From a packing result to per-job moves (partition + features): pure; the daemon/simulator applies them."""

from __future__ import annotations

from collections.abc import Sequence

from .aggregate import aggregate
from .model import Move, NodeClass, PackingParams, PackingProblem, PackingResult, PendingJob, Pool


def decide_moves(jobs: Sequence[PendingJob], problem: PackingProblem, result: PackingResult) -> list[Move]:
    """Moves that put each job where ``result`` assigned it.

    ``jobs`` are the pending jobs the problem was built from (same order: most urgent first); the first jobs
    of a shape fill its assignments in result order (starting now before booting). A job is never moved when
    it is pinned, unassigned (it waits where it is), or already in the target partition with the target
    features. Example: a flexible web job in ``batch`` assigned to ``batch/cpu-arm`` ->
    ``Move(job_id, "batch", ("aarch64",), reason)``."""
    _, members = aggregate(jobs, problem.classes)
    by_id = {j.job_id: j for j in jobs}
    classes = {c.name: c for c in problem.classes}
    cursor = {key: 0 for key in members}
    moves: list[Move] = []
    for a in result.assignments:
        ids = members.get(a.shape, ())
        start = cursor.get(a.shape, 0)
        cursor[a.shape] = start + a.count
        for job_id in ids[start:start + a.count]:
            job, klass = by_id[job_id], classes[a.node_class]
            if not job.pinned and not _already_there(job, klass, problem.classes):
                moves.append(Move(job_id=job_id, partition=klass.partition, features=klass.features, reason=a.reason))
    return moves


def _already_there(job: PendingJob, klass: NodeClass, classes: Sequence[NodeClass]) -> bool:
    """Same partition, and its features already ask for the class (or every class there has them anyway)."""
    if job.current_partition != klass.partition:
        return False
    wanted = set(klass.features)
    return wanted <= set(job.current_features) or all(
        wanted <= set(c.features) for c in classes if c.partition == klass.partition)


def problem_from_jobs(jobs: Sequence[PendingJob], pools: Sequence[Pool], classes: Sequence[NodeClass],
                      params: PackingParams | None = None) -> PackingProblem:
    """The problem for these jobs on these pools/classes (shapes by :func:`aggregate`)."""
    shapes, _ = aggregate(jobs, classes)
    return PackingProblem(pools=tuple(pools), classes=tuple(classes), shapes=shapes, params=params or PackingParams())
