"""Accelerator mapping: which nodes/partitions can serve a job's GRES, and refusing the impossible."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..snapshot import GresCount, NodeState, PartitionState, Snapshot
from .decision import Admission, AdmissionBuilder
from .request import JobRequest, arch_choice

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site.schema import WorkloadClass


def _fmt(g: GresCount) -> str:
    return f"{g.name}:{g.type + ':' if g.type else ''}{g.count}"


def _serves(node: NodeState, g: GresCount, archs: frozenset[str]) -> bool:
    return node.gres_total(g.name, g.type) >= g.count and (not archs or node.arch in archs)


def _impossible(g: GresCount, snap: Snapshot, archs: frozenset[str]) -> str | None:
    """Why no node could ever serve ``g`` (None if some node can)."""
    if g.name not in snap.gres_names:
        return f"no node in this cluster has GRES '{g.name}' (it has: {', '.join(sorted(snap.gres_names))})"
    types = snap.gres_types(g.name)
    if g.type and g.type not in types:
        return f"no node has {g.name} type '{g.type}' (types here: {', '.join(types) or 'untyped only'})"
    if any(_serves(n, g, archs) for n in snap.nodes):
        return None
    most = snap.max_gres_per_node(g.name, g.type)
    if g.count > most:
        return f"no node has {g.count} x {g.name}{':' + g.type if g.type else ''} (at most {most} per node)"
    return f"no {'|'.join(sorted(archs))} node has {_fmt(g)}"


def _class_types(wclass: WorkloadClass | None, capable: list[NodeState], items) -> set[str]:
    """Types the class prefers among those the capable nodes offer for the untyped items (empty = any)."""
    if not wclass or not wclass.accelerators:
        return set()
    offered = {t for n in capable for g in items if not g.type for t in n.gres_types(g.name)}
    return offered & set(wclass.accelerators)


def _free_now(node: NodeState, items, cpus: int) -> bool:
    return node.usable_now and node.free_cpus >= cpus and all(
        node.gres_free(g.name, g.type) >= g.count for g in items)


def _best_partition(snap: Snapshot, eligible: set[str], req: JobRequest) -> tuple[PartitionState, int] | None:
    """The UP partition holding the most eligible nodes free now (then the most eligible nodes)."""
    scored = []
    for p in snap.partitions:
        nodes = [n for n in snap.nodes_in(p.name) if n.name in eligible]
        too_short = req.time_limit and p.max_time_min and req.time_limit > p.max_time_min
        if p.up and nodes and not too_short:
            free = sum(_free_now(n, req.routing_gres, req.cpus_per_node) for n in nodes)
            scored.append(((free, len(nodes) / len(snap.nodes_in(p.name)), p.default), p.name, p, free))
    if not scored:
        return None
    _, _, part, free = max(scored, key=lambda s: (s[0], s[1]))
    return part, free


def map_accelerators(req: JobRequest, snap: Snapshot, wclass: WorkloadClass | None,
                     out: AdmissionBuilder) -> Admission | None:
    """Check and route a job's GRES; returns a reject Admission, or None after adding any changes to ``out``.

    A request no node could ever satisfy (unknown GRES or type, more units than any node has, none on the
    arches the constraint allows, or a named partition without such nodes) is refused. A job that names no
    partition goes to the partition with the most suitable nodes free now; an untyped request of a class
    that lists accelerators is narrowed (via features) to those types when the partition offers others.
    The answer depends only on the request fields below, so it is computed once per snapshot and shape.
    """
    if not req.routing_gres or not snap.known:
        return None
    key = ("accel", req.routing_gres, req.features, wclass.name if wclass else None, req.partition,
           req.time_limit, req.cpus_per_node)
    plan = snap.memo(key, lambda: _plan(req, snap, wclass))
    if isinstance(plan, Admission):
        return plan
    if plan:
        out.add("accel", plan[0], **plan[1])
    return None


def _plan(req: JobRequest, snap: Snapshot, wclass: WorkloadClass | None):
    """A reject Admission, None (nothing to do), or (reason, changes) for :func:`map_accelerators`."""
    items = req.routing_gres
    archs = arch_choice(req.features).archs
    for g in items:
        why = _impossible(g, snap, archs)
        if why:
            return Admission.reject(f"--gres={','.join(map(_fmt, items))}: {why}", "gres")
    capable = [n for n in snap.nodes if all(_serves(n, g, archs) for g in items)]
    if not capable:
        return Admission.reject(f"no single node has all of {', '.join(map(_fmt, items))}", "combination")
    preferred = _class_types(wclass, capable, items)
    eligible = [n for n in capable if not preferred or any(
        t in preferred for g in items if not g.type for t in n.gres_types(g.name))]
    names = {n.name for n in eligible}
    if req.partition:
        asked = req.partition.split(",")
        if not any(n.name in names for p in asked for n in snap.nodes_in(p)) and all(snap.partition(p) for p in asked):
            holders = sorted({p.name for p in snap.partitions for n in snap.nodes_in(p.name) if n.name in names})
            return Admission.reject(f"partition {req.partition} has no node with {', '.join(map(_fmt, items))} "
                                   f"(partitions that do: {', '.join(holders)})", "partition")
        return None
    best = _best_partition(snap, names, req)
    if best is None:
        return None
    part, free = best
    types = sorted({t for n in eligible for g in items for t in n.gres_types(g.name)})
    changes: dict[str, str | int] = {}
    default = snap.default_partition
    if not (default and default.name == part.name):
        changes["partition"] = part.name
    offered = {t for n in snap.nodes_in(part.name) for g in items for t in n.gres_types(g.name)}
    if preferred and offered - preferred and not req.features:
        changes["features"] = "|".join(sorted(preferred & offered))
    return (f"{', '.join(map(_fmt, items))} can run on {', '.join(types) or 'untyped'}: partition "
            f"{part.name} ({free} suitable node{'s' if free != 1 else ''} free now)", changes)
