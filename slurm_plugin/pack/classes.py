"""Pools and node classes derived from a :class:`~slurm_plugin.site.Site` and the nodes' current state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .model import NodeClass, Pool, Resources

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import NodeGroup, Site


@dataclass(frozen=True)
class GroupState:
    """What is free in one node group now and how many of its nodes are powered down (they add capacity
    after the group's boot time). Missing state means: every node up and idle."""

    free: Resources
    down_nodes: int = 0


def accel_type(group: NodeGroup) -> str | None:
    """The accelerator type a node group's jobs select: its GPU type, else its first accelerator's."""
    if group.gpu:
        return group.gpu.type
    return group.accelerators[0].type if group.accelerators else None


def per_node(group: NodeGroup) -> Resources:
    """Resources of one node of the group (accelerators: the devices of its selecting type)."""
    accels = group.gpu.count if group.gpu else (group.accelerators[0].count if group.accelerators else 0)
    return Resources(cpus=group.cpu.cores * group.cpu.threads_per_core, mem_gb=group.memory_gb, accels=accels)


def pool_of(group: NodeGroup, state: GroupState | None) -> Pool:
    """The pool of one node group; default state: all nodes up and idle."""
    node = per_node(group)
    idle = Resources(node.cpus * group.count, node.mem_gb * group.count, node.accels * group.count)
    state = state or GroupState(free=idle)
    return Pool(name=group.name, per_node=node, free_now=state.free, down_nodes=state.down_nodes,
                boot_time_s=float(group.boot_time_s), cost_per_hour=group.cost_per_hour, size=group.count)


def speed_table(site: Site, group: NodeGroup) -> tuple[tuple[str, float], ...]:
    """Workload class -> speed on this group: accelerator-type factor, else arch factor, else 1.0, times the
    group's measured ``speed_factor`` (benchmarks); 0 where the class's ``archs`` or ``accelerators`` exclude the
    group."""
    table = []
    acc = accel_type(group)
    for wc in site.policy.workload_classes:
        if group.cpu.arch not in wc.archs or (wc.accelerators and acc not in wc.accelerators):
            factor = 0.0
        else:
            factor = wc.speed.get(acc, wc.speed.get(group.cpu.arch, 1.0)) if acc else wc.speed.get(group.cpu.arch, 1.0)
        table.append((wc.name, float(factor) * group.speed_factor))
    return tuple(table)


def classes_from_site(site: Site, state: Mapping[str, GroupState] | None = None
                      ) -> tuple[tuple[Pool, ...], tuple[NodeClass, ...]]:
    """One pool per node group and one class per (partition, node group), named ``partition/group``.

    A class's ``features`` (arch, then accelerator type) are what a job's ``--constraint`` needs so Slurm
    starts it on that class inside the partition. Partitions that are not UP give no class."""
    state = state or {}
    groups = {g.name: g for g in site.node_groups}
    pools = tuple(pool_of(g, state.get(g.name)) for g in site.node_groups)
    classes = []
    for part in site.partitions:
        if part.state != "UP":
            continue
        for name in part.node_groups:
            g = groups[name]
            acc = accel_type(g)
            classes.append(NodeClass(
                name=f"{part.name}/{g.name}", partition=part.name, arch=g.cpu.arch, accel_type=acc, pool=g.name,
                features=(g.cpu.arch,) + ((acc,) if acc else ()), speed=speed_table(site, g)))
    return pools, tuple(classes)
