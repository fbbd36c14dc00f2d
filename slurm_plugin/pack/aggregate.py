"""Pending jobs -> job shapes: jobs that are interchangeable for packing become one shape with a count."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from .model import JobShape, NodeClass, PendingJob


def allowed_classes(job: PendingJob, classes: Sequence[NodeClass]) -> frozenset[str]:
    """Classes in the job's partitions, of an allowed arch, and with an accelerator type it accepts (a job that
    needs accelerators goes only where there are some; a CPU job goes anywhere its partitions allow)."""
    ok = set()
    for c in classes:
        if c.partition not in job.partitions or (job.archs and c.arch not in job.archs):
            continue
        if job.per_job.accels > 0 and c.accel_type is None:
            continue
        if job.accel_types and c.accel_type is not None and c.accel_type not in job.accel_types:
            continue
        ok.add(c.name)
    return frozenset(ok)


def shape_key(job: PendingJob, allowed: frozenset[str]) -> str:
    """Readable, deterministic key: workload, band, resources, nodes, hours, pinned, and a hash of ``allowed``."""
    digest = hashlib.sha1("|".join(sorted(allowed)).encode()).hexdigest()[:8]
    r = job.per_job
    pin = ":pinned" if job.pinned else ""
    return (f"{job.workload}:b{job.band}:{r.cpus:g}c/{r.mem_gb:g}G/{r.accels:g}a:{job.nodes}n:{job.hours:g}h"
            f"{pin}:{digest}")


def aggregate(jobs: Sequence[PendingJob], classes: Sequence[NodeClass]
              ) -> tuple[tuple[JobShape, ...], dict[str, tuple[str, ...]]]:
    """Group jobs into shapes; return the shapes (first-seen order) and shape key -> job ids in input order
    (pass jobs most urgent first: :func:`~slurm_plugin.pack.apply.decide_moves` starts them first).
    Jobs that no class accepts are left out."""
    members: dict[str, list[str]] = {}
    first: dict[str, tuple[PendingJob, frozenset[str]]] = {}
    # a queue of 100k jobs has a few hundred distinct (placement, shape) pairs: each is worked out once
    allowed_of: dict[tuple, frozenset[str]] = {}
    key_of: dict[tuple, str] = {}
    for job in jobs:
        where = (job.partitions, job.archs, job.per_job.accels > 0, job.accel_types)
        allowed = allowed_of.get(where)
        if allowed is None:
            allowed = allowed_of[where] = allowed_classes(job, classes)
        if not allowed:
            continue
        what = (job.workload, job.band, job.per_job, job.nodes, job.hours, job.pinned, allowed)
        key = key_of.get(what)
        if key is None:
            key = key_of[what] = shape_key(job, allowed)
        members.setdefault(key, []).append(job.job_id)
        first.setdefault(key, (job, allowed))
    shapes = tuple(
        JobShape(key=key, per_job=job.per_job, hours=job.hours, workload=job.workload, band=job.band,
                 allowed=allowed, count=len(members[key]), nodes=job.nodes, pinned=job.pinned)
        for key, (job, allowed) in first.items())
    return shapes, {k: tuple(v) for k, v in members.items()}
