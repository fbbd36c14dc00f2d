"""The simulated machine: node groups as plain records, built from a site file or an SWF header."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..site import Site


@dataclass(frozen=True)
class GroupSpec:
    """Identical nodes. ``gres`` maps (name, type) -> count per node."""

    name: str
    count: int
    arch: str = "x86_64"
    cores: int = 1
    memory_gb: float = 0.0
    gres: dict[tuple[str, str], int] = field(default_factory=dict)
    idle_w: float = 100.0
    busy_w: float = 300.0
    off_w: float = 0.0
    boot_s: float = 0.0
    shutdown_s: float = 0.0
    cost_per_hour: float = 0.0


@dataclass(frozen=True)
class Machine:
    name: str
    groups: tuple[GroupSpec, ...]

    @property
    def nodes(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def cores(self) -> int:
        return sum(g.count * g.cores for g in self.groups)

    @property
    def gres_keys(self) -> tuple[tuple[str, str], ...]:
        return tuple(dict.fromkeys(k for g in self.groups for k in g.gres))


def machine_from_site(site: Site, partition: str | None = None) -> Machine:
    """All node groups of the site, or only those of ``partition``."""
    names = None
    if partition is not None:
        parts = {p.name: p for p in site.partitions}
        if partition not in parts:
            raise ValueError(f"no partition '{partition}' in site {site.name} (has: {', '.join(parts)})")
        names = set(parts[partition].node_groups)
    groups = tuple(GroupSpec(
        name=g.name, count=g.count, arch=g.cpu.arch, cores=g.cpu.cores * g.cpu.threads_per_core,
        memory_gb=float(g.memory_gb), gres={(n, t): c for n, t, c in g.gres}, idle_w=g.power.idle_w,
        busy_w=g.power.busy_w, off_w=g.power.off_w, boot_s=float(g.boot_time_s),
        shutdown_s=float(g.shutdown_time_s), cost_per_hour=g.cost_per_hour) for g in site.node_groups
        if names is None or g.name in names)
    return Machine(site.name, groups)


# What an SWF header does not say, for power studies (``hetsched scale eval`` with no --site): a generic
# dual-socket CPU node, 100 W idle, 300 W fully busy, 5 W off (BMC standby), 120 s boot, 30 s shutdown.
SWF_NODE_POWER = dict(idle_w=100.0, busy_w=300.0, off_w=5.0, boot_s=120.0, shutdown_s=30.0)


def homogeneous(nodes: int, cores_per_node: int, name: str = "swf") -> Machine:
    """The machine an SWF header describes (no memory, no GRES; memory requests are not modelled), with the
    documented :data:`SWF_NODE_POWER` draw and boot times."""
    return Machine(name, (GroupSpec(name="nodes", count=nodes, cores=cores_per_node, **SWF_NODE_POWER),))
