"""The snapshot's typed records. All frozen: a snapshot is read by many and changed by none.

Units: memory in MiB, time in minutes, counts of CPUs/GRES as Slurm counts them. A field Slurm leaves
unset is None (never Slurm's NO_VAL sentinels).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from ..site.bounds import ARCHES
from .arrays import task_ids, task_ranges
from .gres import GresCount

ARCH_FEATURES = ARCHES  # the node features that name an architecture
# Node states in which a node can start a job now (base state, lower case).
USABLE_NOW = ("idle", "mixed")
# Flags that keep a node from taking new work even if its base state is idle/mixed.
BLOCKING_FLAGS = ("drain", "draining", "drained", "fail", "failing", "maint", "reserved", "powered_down",
                  "powering_down", "powering_up", "power_down", "not_responding", "reboot_requested",
                  "reboot_issued", "invalid_reg")
# Why a held job pends (``scontrol hold``/``uhold``, ``requeuehold``, too many requeues); Slurm also gives every
# held job priority 0, which no other pending job has (priority/multifactor and basic keep it at 1 or more), on
# 22.05 and 24.11 alike.
HOLD_REASONS = ("JobHeldUser", "JobHeldAdmin", "JobHoldMaxRequeue")


@dataclass(frozen=True)
class NodeState:
    """One node as Slurm sees it now.

    ``state`` is the base state (``idle``, ``mixed``, ``allocated``, ``down``, ``unknown`` ...) and ``flags`` the
    extra state words (``drain``, ``powered_down`` ...), all lower case. ``gres`` is what the node is configured
    with, ``gres_used`` what running jobs hold. ``arch`` comes from the node's Features (the declared arch of a
    heterogeneous pool), not from the host that happens to run slurmd.
    """

    name: str
    state: str
    flags: tuple[str, ...] = ()
    cpus: int = 0
    alloc_cpus: int = 0
    memory_mb: int = 0
    alloc_memory_mb: int = 0
    features: tuple[str, ...] = ()
    active_features: tuple[str, ...] = ()
    gres: tuple[GresCount, ...] = ()
    gres_used: tuple[GresCount, ...] = ()
    partitions: tuple[str, ...] = ()
    weight: int = 1
    reason: str = ""

    @cached_property
    def arch(self) -> str | None:
        return next((f for f in self.features if f in ARCH_FEATURES), None)

    @property
    def free_cpus(self) -> int:
        return max(self.cpus - self.alloc_cpus, 0)

    @property
    def free_memory_mb(self) -> int:
        return max(self.memory_mb - self.alloc_memory_mb, 0)

    @property
    def usable_now(self) -> bool:
        """Can start a job now: idle or mixed and no draining/power/fail flag."""
        return self.state in USABLE_NOW and not any(f in BLOCKING_FLAGS for f in self.flags)

    @property
    def powered_down(self) -> bool:
        return any(f in ("powered_down", "power_down", "powering_down") for f in self.flags)

    def gres_total(self, name: str, gtype: str | None = None) -> int:
        """Configured units of GRES ``name`` (of ``gtype`` when given)."""
        return sum(g.count for g in self.gres if g.name == name and (gtype is None or g.type == gtype))

    def gres_free(self, name: str, gtype: str | None = None) -> int:
        used = sum(g.count for g in self.gres_used if g.name == name and (gtype is None or g.type == gtype))
        return max(self.gres_total(name, gtype) - used, 0)

    def gres_types(self, name: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g.type for g in self.gres if g.name == name and g.type))


@dataclass(frozen=True)
class PartitionState:
    """A partition: its nodes, whether it takes jobs (``state`` UP), default flag, limits."""

    name: str
    nodes: tuple[str, ...]
    state: str = "UP"
    default: bool = False
    max_time_min: int | None = None  # None = unlimited
    priority_tier: int = 1

    @property
    def up(self) -> bool:
        return self.state.upper() == "UP"


@dataclass(frozen=True)
class JobState:
    """A job in the queue (pending or running), or one Slurm still remembers after it ended (``Snapshot.finished``).

    One record of slurmctld's job table: the tasks of a pending job array that have no record of their own yet
    are one record, as Slurm keeps them (``array_tasks``, ``task_count``; address it by ``slurm_id``)."""

    job_id: int
    state: str  # PENDING, RUNNING, ... (upper case)
    partition: str = ""
    user_id: int | None = None
    name: str = ""
    features: str = ""
    cpus: int | None = None
    node_count: int | None = None
    memory_per_node_mb: int | None = None
    memory_per_cpu_mb: int | None = None
    time_limit_min: int | None = None
    gres: tuple[GresCount, ...] = ()
    priority: int | None = None
    qos: str = ""
    account: str = ""
    comment: str = ""
    wckey: str = ""
    nodes: str = ""
    reason: str = ""
    submit_time: int | None = None
    array_job_id: int | None = None
    array_task_id: int | None = None  # this record's task of array ``array_job_id`` (None: not one task)
    array_tasks: str = ""  # a pending array's record: the task ids it still holds, as squeue writes them ("4-100")
    task_count: int = 1  # jobs this record stands for: the tasks of ``array_tasks``, else 1
    start_time: int | None = None  # when it started (None while pending: Slurm's figure is then an estimate)
    end_time: int | None = None  # when it ended (None until it has: for a running job Slurm's is the limit)

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"

    @property
    def slurm_id(self) -> str:
        """How ``scontrol update jobid=`` names this record and nothing else: ``123_[4-100]`` for a pending
        array's record (its tasks without squeue's steps: :func:`~slurm_plugin.snapshot.arrays.task_ranges`)
        and ``123_7`` for the task that kept the array's id (the id alone, 123, names every task of the array,
        also those with records of their own), else the job id."""
        if self.array_tasks:
            return f"{self.job_id}_[{task_ranges(task_ids(self.array_tasks))}]"
        if self.array_task_id is not None and self.job_id == self.array_job_id:
            return f"{self.job_id}_{self.array_task_id}"
        return str(self.job_id)

    @property
    def held(self) -> bool:
        """Pending under a user or admin hold: its owner (or an admin) stopped it, so the suite never ranks,
        moves or releases it (priority 0 or a hold reason)."""
        return self.state == "PENDING" and (self.priority == 0 or self.reason in HOLD_REASONS)


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The cluster at one instant. ``taken_at`` is a Unix time; ``slurm_version`` as ``sinfo -V`` prints it.
    ``jobs`` are the pending and running ones; ``finished`` those that ended and Slurm still remembers.

    Look-ups (by name, per partition, per GRES) are indexed once and cached, so a reader may call them per
    request; :meth:`memo` caches a reader's own derived answers. Equality is identity. An empty snapshot (``Snapshot.empty()``) means "nothing known yet": readers must not refuse work
    because of it.
    """

    nodes: tuple[NodeState, ...] = ()
    partitions: tuple[PartitionState, ...] = ()
    jobs: tuple[JobState, ...] = ()
    taken_at: float = field(default_factory=time.time)
    slurm_version: str = ""
    finished: tuple[JobState, ...] = ()  # ended jobs Slurm still remembers (MinJobAge): the live guard's outcomes
    jobs_taken_at: float | None = None  # when ``jobs``/``finished`` were read, if earlier than ``taken_at``
    jobs_left_out: bool = False  # ``jobs``/``finished`` were dropped (:meth:`without_jobs`): empty, not unknown
    _memo: dict = field(default_factory=dict, repr=False)

    def without_jobs(self) -> Snapshot:
        """This snapshot without ``jobs`` and ``finished`` (``jobs_left_out``), sharing its memo: what was derived
        from the jobs before stays readable, cheap to pickle."""
        return replace(self, jobs=(), finished=(), jobs_left_out=True, _memo=self._memo)

    def memo(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per snapshot and ``key`` (readers cache derived answers; a snapshot never changes,
        so its cache never goes stale and is dropped with it)."""
        try:
            return self._memo[key]
        except KeyError:
            value = self._memo[key] = compute()
            return value

    @classmethod
    def empty(cls) -> Snapshot:
        return cls(taken_at=0.0)

    @property
    def known(self) -> bool:
        return bool(self.nodes)

    def age_s(self, now: float | None = None) -> float:
        return (now if now is not None else time.time()) - self.taken_at

    @cached_property
    def _node_index(self) -> dict[str, NodeState]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def _partition_index(self) -> dict[str, PartitionState]:
        return {p.name: p for p in self.partitions}

    def node(self, name: str) -> NodeState | None:
        return self._node_index.get(name)

    def partition(self, name: str) -> PartitionState | None:
        return self._partition_index.get(name)

    @cached_property
    def default_partition(self) -> PartitionState | None:
        return next((p for p in self.partitions if p.default), None)

    def nodes_in(self, partition: str) -> tuple[NodeState, ...]:
        """The nodes of ``partition`` that the snapshot knows (empty for an unknown partition)."""
        return self._nodes_by_partition.get(partition, ())

    @cached_property
    def _nodes_by_partition(self) -> dict[str, tuple[NodeState, ...]]:
        return {p.name: tuple(n for n in map(self._node_index.get, p.nodes) if n) for p in self.partitions}

    def archs_of(self, partition: str) -> frozenset[str]:
        return frozenset(arch for (p, arch) in self._arch_count if p == partition)

    def arch_count(self, partition: str, arch: str) -> int:
        """Nodes of ``arch`` in ``partition`` (any state)."""
        return self._arch_count.get((partition, arch), 0)

    @cached_property
    def _arch_count(self) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for p, nodes in self._nodes_by_partition.items():
            for n in nodes:
                if n.arch:
                    out[p, n.arch] = out.get((p, n.arch), 0) + 1
        return out

    def gres_node_count(self, partition: str) -> int:
        """Nodes of ``partition`` that have any GRES (accelerator nodes)."""
        return self._gres_node_count.get(partition, 0)

    @cached_property
    def _gres_node_count(self) -> dict[str, int]:
        return {p: sum(bool(n.gres) for n in nodes) for p, nodes in self._nodes_by_partition.items()}

    def usable_now(self, partition: str, arch: str) -> tuple[NodeState, ...]:
        """Nodes of ``arch`` in ``partition`` that can start work now, most free CPUs first."""
        return self._usable.get((partition, arch), ())

    @cached_property
    def _usable(self) -> dict[tuple[str, str], tuple[NodeState, ...]]:
        out: dict[tuple[str, str], list[NodeState]] = {}
        for p, nodes in self._nodes_by_partition.items():
            for n in nodes:
                if n.arch and n.usable_now:
                    out.setdefault((p, n.arch), []).append(n)
        return {k: tuple(sorted(v, key=lambda n: -n.free_cpus)) for k, v in out.items()}

    @cached_property
    def gres_names(self) -> frozenset[str]:
        return frozenset(g.name for n in self.nodes for g in n.gres if g.count > 0)

    def gres_types(self, name: str) -> tuple[str, ...]:
        """Every configured type of GRES ``name`` in the cluster, in node order."""
        return tuple(dict.fromkeys(t for n in self.nodes for t in n.gres_types(name)))

    def max_gres_per_node(self, name: str, gtype: str | None = None) -> int:
        return max((n.gres_total(name, gtype) for n in self.nodes), default=0)

    def jobs_in(self, states: Iterable[str] = ("PENDING",)) -> tuple[JobState, ...]:
        wanted = set(states)
        return tuple(j for j in self.jobs if j.state in wanted)

    def pending_in(self, partition: str) -> int:
        """Pending jobs that name ``partition`` (a job submitted to several partitions counts in each)."""
        return self._pending_by_partition.get(partition, 0)

    @cached_property
    def _pending_by_partition(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for j in self.jobs:
            if j.pending:
                for p in filter(None, j.partition.split(",")):
                    out[p] = out.get(p, 0) + 1
        return out
