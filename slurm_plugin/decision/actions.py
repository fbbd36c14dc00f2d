"""The actions a cycle may take, each a frozen value with the reason it was taken.

Every action maps to Slurm's own knobs (see :mod:`.applier` for the exact commands); nothing else changes Slurm.
Tags: reasons the suite writes into Slurm (node drain reasons) start with :data:`TAG`, so the suite only ever
clears what it set itself.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal, Union

TAG = "hetsched:"


class Cause(str, enum.Enum):
    """Why an action was taken, for code (journal counts, metrics, guards); people read ``reason``.
    A str enum: it serialises as its name (``"RETRY"``). Every action of the cycle's steps carries one."""

    BACKLOG = "BACKLOG"  # pending jobs need the nodes
    WARM_POOL = "WARM_POOL"  # kept ready for short jobs (warm pool, PID headroom)
    ADMIN_FLOOR = "ADMIN_FLOOR"  # the group's min_on
    CAPACITY_PLAN = "CAPACITY_PLAN"  # the hourly capacity plan of `hetsched cost plan` keeps this many on
    IDLE_GRACE = "IDLE_GRACE"  # idle past the grace and not needed
    STUCK_BOOT = "STUCK_BOOT"  # still powering up long past ResumeTimeout: forced down
    RETRY = "RETRY"  # a failed power-up, retried after its backoff
    GIVE_UP = "GIVE_UP"  # retries used up: left DOWN with the error as its reason
    CALENDAR = "CALENDAR"  # a calendar (policy.reshapes) says so
    RANKING = "RANKING"  # the configured ranking's order (SiteFactor level inside the job's band)
    AGE_FLOOR = "AGE_FLOOR"  # pending past the age floor: ahead of every band
    PACKING = "PACKING"  # packing moved a flexible pending job to the node class it chose
    POLICY_ROLLBACK = "POLICY_ROLLBACK"  # the live guard: the running policy fell behind its twin's prediction
    GRAPH = "GRAPH"  # a workflow's requirement graph: a unit's level in its band, or its move off a full class
    FAULT_SIGNATURE = "FAULT_SIGNATURE"  # the health check matched a fault signature (health/signatures/*.yaml)
    HEALTHY_AGAIN = "HEALTHY_AGAIN"  # the health check resumes a node it drained: the fault is over
    SLOW_NODE = "SLOW_NODE"  # a benchmark job found the node well below its group's median (hw/bench.py)
    ISOLATION = "ISOLATION"  # a node that ran sensitive work is power-cycled before reuse (deploy/wipe.py)


def job_ref(action: SetSiteFactor | MoveJob, job_id: int) -> str:
    """What ``scontrol update jobid=`` is given for ``job_id``: the address the cycle found for it in the
    snapshot (``123_[4-100]``: a pending array's record, :attr:`~slurm_plugin.snapshot.JobState.slurm_id`), else
    the id."""
    return next((ref for j, ref in action.addresses if j == job_id), str(job_id))


def job_refs_in_order(action: SetSiteFactor | MoveJob) -> list[tuple[int, str]]:
    """(job id, :func:`job_ref`) of each of the action's jobs, in order: one look-up table, not a scan of the
    addresses per job (25,000 jobs of one band took minutes that way)."""
    ids = action.job_ids if isinstance(action, SetSiteFactor) else (action.job_id,)
    known = dict(action.addresses)
    return [(j, known.get(j) or str(j)) for j in ids]


@dataclass(frozen=True)
class SetSiteFactor:
    """Set the SiteFactor of pending jobs (priority/multifactor adds it to Slurm's own factors)."""

    job_ids: tuple[int, ...]
    site_factor: int
    reason: str
    cause: Cause | None = None
    addresses: tuple[tuple[int, str], ...] = ()  # (job id, how Slurm is told it): see :func:`job_ref`
    kind: Literal["site_factor"] = "site_factor"


@dataclass(frozen=True)
class MoveJob:
    """Move a pending job to another partition and/or feature constraint (never a job its user pinned)."""

    job_id: int
    partition: str | None
    features: str | None
    reason: str
    cause: Cause | None = None
    addresses: tuple[tuple[int, str], ...] = ()  # as SetSiteFactor's
    kind: Literal["move_job"] = "move_job"


@dataclass(frozen=True)
class PowerNodes:
    """Ask Slurm to power nodes up or down (Slurm runs ResumeProgram/SuspendProgram), or leave nodes whose
    power-up kept failing DOWN (``"DOWN"``, with the error in the reason) until an admin resumes them."""

    nodes: tuple[str, ...]
    action: Literal["POWER_UP", "POWER_DOWN", "POWER_DOWN_FORCE", "DOWN"]
    reason: str
    cause: Cause | None = None
    kind: Literal["power"] = "power"


@dataclass(frozen=True)
class SetPartitionNodes:
    """Replace a partition's node list (calendar reshaping)."""

    partition: str
    nodes: tuple[str, ...]
    reason: str
    cause: Cause | None = None
    kind: Literal["partition_nodes"] = "partition_nodes"


@dataclass(frozen=True)
class DrainNodes:
    """Drain nodes (no new jobs; running ones finish), resume nodes the suite drained itself (UNDRAIN: clear
    the drain only, leaving a powered-down node off), or REBOOT them: drained until their jobs are gone, then
    rebooted by Slurm's RebootProgram and resumed when they are back (``scontrol reboot ASAP nextstate=RESUME``)."""

    nodes: tuple[str, ...]
    action: Literal["DRAIN", "RESUME", "UNDRAIN", "REBOOT"]
    reason: str
    cause: Cause | None = None
    kind: Literal["drain"] = "drain"


@dataclass(frozen=True)
class RequeueJobs:
    """Requeue running jobs (``scontrol requeue``): their node failed under them; Slurm starts them again."""

    job_ids: tuple[int, ...]
    reason: str
    cause: Cause | None = None
    kind: Literal["requeue"] = "requeue"


@dataclass(frozen=True)
class SwitchPolicy:
    """Replace the active policy file ``path`` with a copy of ``to`` (None: the default policy), only if its
    content is still ``from_sha256`` (the policy that was judged); the old content is kept beside it. Applied
    by :func:`slurm_plugin.decision.policy_file.switch_policy_file`, not through Slurm."""

    path: str
    to: str | None
    from_sha256: str
    reason: str
    cause: Cause | None = None
    kind: Literal["policy"] = "policy"


Action = Union[SetSiteFactor, MoveJob, PowerNodes, SetPartitionNodes, DrainNodes, RequeueJobs, SwitchPolicy]


@dataclass(frozen=True)
class Decision:
    """Everything one cycle decided, in the order it must be applied. ``timings``: (step, seconds) of the
    cycle steps that made it, in order; ``notes``: (name, value) facts a step reports about how it decided, for
    metrics (e.g. ``("pack.status", "optimal")``, ``("pack.gap", 0.004)``). Neither is part of equality: two
    runs decide the same in different times."""

    actions: tuple[Action, ...] = field(default_factory=tuple)
    source: str = ""
    timings: tuple[tuple[str, float], ...] = field(default=(), compare=False)
    notes: tuple[tuple[str, str | float], ...] = field(default=(), compare=False)

    def __add__(self, other: Decision) -> Decision:
        return Decision(self.actions + other.actions, "+".join(filter(None, (self.source, other.source))),
                        self.timings + other.timings, self.notes + other.notes)
