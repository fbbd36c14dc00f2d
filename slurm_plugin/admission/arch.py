"""Architecture routing: send a job that accepts several arches to the one with room now."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..snapshot import PartitionState, Snapshot
from .decision import AdmissionBuilder
from .request import JobRequest, arch_choice

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site.schema import WorkloadClass


def _home(snap: Snapshot, arch: str, partition: str | None, time_limit: int | None) -> PartitionState | None:
    """Where a job of ``arch`` would go: the named partition, else the default partition if it has that
    arch, else the UP partition with the most nodes of that arch and no GRES nodes (fewest GRES nodes)."""
    if partition:
        part = snap.partition(partition)
        return part if part and snap.arch_count(part.name, arch) else None
    candidates = []
    for p in snap.partitions:
        of_arch = snap.arch_count(p.name, arch)
        too_short = time_limit and p.max_time_min and time_limit > p.max_time_min
        if p.up and of_arch and not too_short:
            candidates.append(((p.default, -snap.gres_node_count(p.name), of_arch), p.name, p))
    return max(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None


def _room(snap: Snapshot, part: PartitionState, arch: str, req: JobRequest) -> tuple[int, int]:
    """(nodes of ``arch`` in ``part`` that can start the job now, counted up to the job's node count;
    their free CPUs). Stops at the first node with too few free CPUs (nodes come most-free first)."""
    cpus, mem, need = req.cpus_per_node, req.memory_per_node_mb, req.min_nodes or 1
    fit = free = 0
    for n in snap.usable_now(part.name, arch):
        if n.free_cpus < cpus or fit >= need:
            break
        if n.free_memory_mb >= mem:
            fit, free = fit + 1, free + n.free_cpus
    return fit, free


def route_arch(req: JobRequest, snap: Snapshot, wclass: WorkloadClass | None,
               out: AdmissionBuilder) -> frozenset[str] | None:
    """Narrow a multi-arch job to the arch (and partition) with free capacity now; adds to ``out``.

    Routable: ``--constraint`` exactly an OR of arches, or no constraint and a portable workload class
    (its ``archs``, minus those of speed 0). A job pinned to one arch, naming nodes, asking for GRES (see
    accel) or naming several partitions is never moved. With no arch able to start it now, it is left
    to Slurm unchanged. Returns the arches the user allowed when the job was routed (so the daemon's cycle
    may route it again later), else None.
    """
    if not snap.known or req.req_nodes or req.routing_gres or (req.partition and "," in req.partition):
        return None
    choice = arch_choice(req.features)
    if choice.routable:
        allowed, source = choice.archs, "--constraint"
    elif not req.features and wclass and wclass.portable:
        allowed = frozenset(a for a in wclass.archs if wclass.speed.get(a, 1.0) > 0)
        source = f"portable class {wclass.name}"
    else:
        if len(choice.archs) == 1:
            out.add("arch", f"pinned to {next(iter(choice.archs))} by --constraint: not moved")
        return None
    if len(allowed) < 2:
        return None
    speed = wclass.speed if wclass else {}
    options = []
    for arch in sorted(allowed):
        part = snap.memo(("arch-home", arch, req.partition, req.time_limit),
                         lambda: _home(snap, arch, req.partition, req.time_limit))
        if part:
            nodes, cpus = _room(snap, part, arch, req)
            options.append(((nodes >= (req.min_nodes or 1), speed.get(arch, 1.0) * cpus), arch, part, nodes))
    fitting = [o for o in options if o[0][0]]
    if not fitting:
        out.add("arch", f"{source} allows {'|'.join(sorted(allowed))} but none has room now: left to Slurm")
        return None
    _, arch, part, nodes = max(fitting, key=lambda o: o[0])
    changes: dict[str, str | int] = {"features": arch}
    if not req.partition and not part.default:
        changes["partition"] = part.name
    out.add("arch", f"{source} allows {'|'.join(sorted(allowed))}: routed to {arch} in partition {part.name} "
            f"({nodes} node{'s' if nodes != 1 else ''} with room now)", **changes)
    return allowed
