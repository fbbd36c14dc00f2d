"""What packing needs from a live snapshot: free capacity per node group and the pending jobs as it sees them.

Which pending jobs may be moved (``pinned=False``): a ``--constraint`` that is exactly an OR of architectures
(``aarch64|x86_64``), a comment tag ``hetsched:...,flex=aarch64|x86_64`` (admission routed a flexible job and
recorded what its user allowed), or no constraint and a workload class the site marks portable
(``--comment=class=web``). Everything else is pinned: the user chose, and the suite never overrides a choice.

Accelerator types: a job with an untyped GRES (``--gres=gpu:1``) whose ``--constraint`` is exactly an OR of the
site's accelerator types (``a100|h100``), or whose comment tag says ``flex=a100|h100``, may be moved between
those types: the move's features (``aarch64&h100``) pick the type. A job with a typed GRES (``gpu:a100:1``)
keeps its type: on Slurm 22.05.8 ``scontrol update jobid=N gres=gpu:h100:1`` (or ``TresPerNode=``) is accepted
but the job is then "never runnable" (BadConstraints) although an h100 node is idle, and changing between typed
and untyped is refused ("Invalid GRES specification (with and without type identification)"); see
``results/pack/README.md``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..tags import comment_tags
from ..pack import GroupState, PendingJob, Resources
from ..pack.classes import accel_type
from ..pack.plan import keep_within
from ..snapshot import JobState, Snapshot
from ..snapshot.constraint import try_parse
from ..snapshot.model import ARCH_FEATURES as ARCHES

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site


def allowed_archs(job: JobState, site: Site) -> tuple[tuple[str, ...], bool]:
    """(architectures the job may run on, whether its user left the choice open)."""
    parsed = try_parse(job.features)
    alts = (parsed.alternatives() if parsed else None) or ()
    if len(alts) > 1 and all(a in ARCHES for a in alts):
        return alts, True
    tags = comment_tags(job.comment)
    if "flex" in tags:
        archs = tuple(a for a in tags["flex"].split("|") if a in ARCHES)
        if len(archs) > 1:
            return archs, True
    if not job.features and "class" in tags:
        wclass = next((c for c in site.policy.workload_classes if c.name == tags["class"]), None)
        if wclass and wclass.portable:
            return tuple(a for a in wclass.archs if wclass.speed.get(a, 1.0) > 0), True
    return constrained(job.features, ARCHES), False


def constrained(features: str, values) -> tuple[str, ...]:
    """Which of ``values`` (mutually exclusive features: the CPU arches, the accelerator types) a pinned job's
    constraint leaves it, when it leaves fewer than all (else (): any). Packing must confine a pinned job to
    these: a job the suite moved to ``x86_64&mi250x`` is pinned there, and one counted on another class would
    leave that class's capacity to be given away again next cycle (issue 23: 541, 256, 102 moves of different
    band-5 GPU jobs piled onto one 256-job class in three cycles)."""
    parsed = try_parse(features)
    if parsed is None or parsed.root is None:
        return ()
    values = tuple(sorted(values))
    left = parsed.allowed(values)
    return tuple(v for v in values if v in left) if len(left) < len(values) else ()


def _named_features(features: str) -> tuple[str, ...]:
    """Every feature name a job's constraint mentions (none when Slurm would refuse it)."""
    parsed = try_parse(features)
    return tuple(sorted(parsed.names)) if parsed else ()


def accel_choice(job: JobState, site: Site) -> tuple[str, ...]:
    """Accelerator types an untyped-GRES job accepts when it named several (else ())."""
    if not job.gres or any(g.type for g in job.gres):
        return ()
    known = {t for t in map(accel_type, site.node_groups) if t}
    for text in (job.features, comment_tags(job.comment).get("flex", "")):
        parsed = try_parse(text)
        alts = (parsed.alternatives() if parsed else None) or ()
        if len(alts) > 1 and all(a in known for a in alts):
            return alts
    return ()


def group_states(snapshot: Snapshot, site: Site) -> dict[str, GroupState]:
    """Free CPUs, memory (GB) and accelerators of each node group's usable nodes, and its powered-down count."""
    out = {}
    for g in site.node_groups:
        nodes = [n for n in map(snapshot.node, g.hostnames) if n is not None]
        usable = [n for n in nodes if n.usable_now]
        accel = g.gres[0][0] if g.gres else None
        out[g.name] = GroupState(
            free=Resources(cpus=float(sum(n.free_cpus for n in usable)),
                           mem_gb=sum(n.free_memory_mb for n in usable) / 1024.0,
                           accels=float(sum(n.gres_free(accel) for n in usable)) if accel else 0.0),
            down_nodes=sum(1 for n in nodes if n.powered_down))
    return out


def _need(j: JobState) -> tuple[float, float, float]:
    """(CPUs, memory GB, accelerators) the whole job asks for, in packing's terms: a pending array's record
    asks for all its tasks (a move moves them all)."""
    nodes, tasks = j.node_count or 1, j.task_count
    mem_mb = (j.memory_per_node_mb or 0) * nodes or (j.memory_per_cpu_mb or 0) * (j.cpus or 1)
    return float(j.cpus or 1) * tasks, mem_mb * tasks / 1024.0, float(sum(g.count for g in j.gres) * nodes * tasks)


def packing_jobs(snapshot: Snapshot, site: Site, bands: dict[int, int],
                 capacity: tuple[float, float, float] | None = None) -> list[PendingJob]:
    """Pending jobs, most urgent first (band high to low, then oldest), in packing's terms.

    ``bands`` maps job id to a packing band 0..7 (7 most urgent; from the ranking, 0 if unranked).
    ``capacity``: keep only the jobs :func:`~slurm_plugin.pack.plan.keep_within` keeps under that bound (the
    live cycle's horizon), deciding on each job's resources before building anything else for it, so a queue
    of 100,000 costs a sort and a sum per job, not a packing job each (issue 23)."""
    default_class = site.policy.default_class or ""
    queued = [j for j in snapshot.jobs if j.pending and not j.held and j.reason not in ("Dependency", "BeginTime")]
    queued.sort(key=lambda j: (-bands.get(j.job_id, 0), j.job_id))
    needs = [_need(j) for j in queued]
    if capacity is not None:
        kept = [(j, n) for j, n, keep in zip(queued, needs, keep_within(needs, capacity)) if keep]
        if len(kept) < len(queued):
            log.info("pack: %d of %d pending jobs within the horizon; the rest wait for a later cycle",
                     len(kept), len(queued))
    else:
        kept = list(zip(queued, needs))
    jobs = []
    # what a job's constraint, comment and GRES say is worked out once per distinct triple (a large queue
    # repeats a few hundred of them)
    said: dict[tuple, tuple] = {}
    for j, (cpus, mem_gb, accels) in kept:
        words = (j.features, j.comment, j.gres)
        if words not in said:
            archs, flexible = allowed_archs(j, site)
            choice = accel_choice(j, site)
            typed = tuple(dict.fromkeys(g.type for g in j.gres if g.type))
            if not typed and not choice and j.gres:  # an untyped GRES whose constraint names the type
                typed = constrained(j.features, {t for t in map(accel_type, site.node_groups) if t})
            said[words] = (archs, flexible or bool(choice), typed or choice,
                           comment_tags(j.comment).get("class", default_class), _named_features(j.features))
        archs, flexible, types, workload, named = said[words]
        jobs.append(PendingJob(
            job_id=str(j.job_id), per_job=Resources(cpus=cpus, mem_gb=mem_gb, accels=accels),
            hours=(j.time_limit_min or 60) / 60.0, workload=workload,
            band=bands.get(j.job_id, 0), partitions=(j.partition,) if j.partition else (), archs=archs,
            accel_types=types, nodes=j.node_count or 1, pinned=not flexible, current_partition=j.partition or None,
            current_features=named))
    return jobs
