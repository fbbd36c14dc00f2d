"""Typed, frozen inputs and outputs of packing: pools, node classes, job shapes, the problem and its result.

Vocabulary:
- a **pool** is one node group's capacity: what is free now, how many nodes are powered down, and what one
  node adds once booted. Pools are the unit of capacity; several classes may share one pool.
- a **node class** is a place a job can be sent: (partition, arch, accelerator type) over one pool. Two
  partitions over the same node group give two classes that compete for the same pool.
- a **job shape** is a set of pending jobs that are interchangeable for packing (same resources, same
  allowed classes, same workload class and priority band, same pinned flag); ``count`` of them are pending.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

NOW, BOOT = "now", "boot"
TIERS: tuple[str, ...] = (NOW, BOOT)
BANDS: tuple[int, ...] = tuple(range(8))


@dataclass(frozen=True)
class Resources:
    """An amount of the three packed resources: CPU cores, memory (GB) and accelerator devices."""

    cpus: float = 0.0
    mem_gb: float = 0.0
    accels: float = 0.0

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.cpus, self.mem_gb, self.accels)


RESOURCE_NAMES: tuple[str, ...] = ("cpus", "mem_gb", "accels")


@dataclass(frozen=True)
class Pool:
    """Capacity of one node group: ``free_now`` is usable at once, each of ``down_nodes`` powered-down
    nodes adds ``per_node`` after ``boot_time_s``; a node costs ``cost_per_hour`` while it is up. ``size`` is
    the group's node count (a job of more nodes can never run there; 0 = unknown, not checked)."""

    name: str
    per_node: Resources
    free_now: Resources
    down_nodes: int = 0
    boot_time_s: float = 0.0
    cost_per_hour: float = 0.0
    size: int = 0


@dataclass(frozen=True)
class NodeClass:
    """Where a job can be sent: ``partition`` plus the Slurm ``features`` that select ``arch`` and
    ``accel_type`` (None: no accelerator) inside it. ``speed`` maps workload class -> relative speed
    (0: cannot run there)."""

    name: str
    partition: str
    arch: str
    accel_type: str | None
    pool: str
    features: tuple[str, ...]
    speed: tuple[tuple[str, float], ...] = ()

    def speed_for(self, workload: str) -> float:
        return dict(self.speed).get(workload, 1.0)


@dataclass(frozen=True)
class JobShape:
    """``count`` interchangeable pending jobs, each needing ``per_job`` in total over ``nodes`` nodes
    for ``hours`` (time limit) and allowed on the node classes named in ``allowed``."""

    key: str
    per_job: Resources
    hours: float
    workload: str
    band: int
    allowed: frozenset[str]
    count: int
    nodes: int = 1
    pinned: bool = False


@dataclass(frozen=True)
class PackingParams:
    """Knobs of the objective (see :mod:`slurm_plugin.pack` for the exact form).

    ``band_base ** band`` is the weight of a job in priority band ``band`` (7 = most urgent); a start delayed by
    d seconds is worth ``2 ** (-d / half_life_s)``; cost is converted to value units by ``cost_weight``.
    ``mip_rel_gap`` is where HiGHS may stop; ``time_cap_s`` the hard wall-clock cap of one
    :func:`~slurm_plugin.pack.pack` call."""

    band_base: float = 2.0
    half_life_s: float = 600.0
    cost_weight: float = 0.1
    mip_rel_gap: float = 0.01
    time_cap_s: float = 5.0

    def band_weight(self, band: int) -> float:
        return self.band_base**band


@dataclass(frozen=True)
class PackingProblem:
    """Everything one packing decision depends on; no Slurm, no clock."""

    pools: tuple[Pool, ...]
    classes: tuple[NodeClass, ...]
    shapes: tuple[JobShape, ...]
    params: PackingParams = PackingParams()


class SolveStatus(str, Enum):
    """How a result was obtained. ``OPTIMAL``: proven within ``mip_rel_gap``; ``FEASIBLE``: the solver's
    incumbent at its time limit; ``GREEDY``: greedy only (asked for); ``FALLBACK``: the solver failed, timed
    out without an incumbent, or found less than greedy, so the greedy answer is returned."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    GREEDY = "greedy"
    FALLBACK = "fallback"


@dataclass(frozen=True)
class Assignment:
    """Send ``count`` jobs of shape ``shape`` to node class ``node_class``, starting ``tier`` (now, or after
    booting nodes), with the reason why this class."""

    shape: str
    node_class: str
    tier: str
    count: int
    reason: str = ""


@dataclass(frozen=True)
class PackingResult:
    """One packing answer. ``objective`` is the value of the returned assignments (same formula for every
    solver); ``bound`` an upper bound on the optimum (None when no solver proved one); ``gap`` is
    ``(bound - objective) / max(|bound|, 1e-9)``; ``power_up`` maps pool -> nodes to boot. ``build_s`` includes
    ``prep_s`` (options, rows and greedy); the rest of it is the solver's model build."""

    status: SolveStatus
    objective: float
    bound: float | None
    gap: float | None
    build_s: float
    solve_s: float
    assignments: tuple[Assignment, ...] = ()
    power_up: tuple[tuple[str, int], ...] = ()
    solver: str = ""
    greedy_objective: float | None = None
    detail: str = ""
    prep_s: float = 0.0

    def started(self) -> int:
        return sum(a.count for a in self.assignments)


@dataclass(frozen=True)
class PendingJob:
    """One pending Slurm job as packing sees it. ``partitions``, ``archs`` and ``accel_types`` are what the job
    allows (empty ``accel_types``: any type, or none if ``per_job.accels`` is 0). ``pinned``: the user asked for
    one architecture/partition explicitly, so it is never moved. ``current_*`` is what Slurm has now."""

    job_id: str
    per_job: Resources
    hours: float
    workload: str
    band: int
    partitions: tuple[str, ...]
    archs: tuple[str, ...] = ()
    accel_types: tuple[str, ...] = ()
    nodes: int = 1
    pinned: bool = False
    current_partition: str | None = None
    current_features: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class Move:
    """Change pending job ``job_id`` to ``partition`` with constraint ``features`` (all required, '&')."""

    job_id: str
    partition: str
    features: tuple[str, ...]
    reason: str
