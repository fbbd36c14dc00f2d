"""What the shim sends about a job: the whitelisted job_desc fields, typed, and readings of them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

from ..snapshot import GresCount, parse_tres_per_node
from ..snapshot.constraint import try_parse
from ..snapshot.model import ARCH_FEATURES
from ..tags import comment_tags

@dataclass(frozen=True)
class JobRequest:
    """A submission (``op="submit"``) or modification (``op="modify"``, with ``job_id``) as slurmctld saw it.

    Field names follow slurmctld's Lua job_desc; None = not given by the user. ``gres`` is job_desc
    ``tres_per_node`` (``gres:gpu:1`` on 22.05, ``gres/gpu=1`` on 23.02+), memory in MiB, time in minutes.
    """

    op: str = "submit"
    job_id: int | None = None
    partition: str | None = None
    features: str | None = None
    gres: str | None = None
    tres_per_job: str | None = None
    min_cpus: int | None = None
    cpus_per_task: int | None = None
    num_tasks: int | None = None
    ntasks_per_node: int | None = None
    pn_min_cpus: int | None = None
    min_nodes: int | None = None
    max_nodes: int | None = None
    mem_per_node_mb: int | None = None
    mem_per_cpu_mb: int | None = None
    time_limit: int | None = None
    qos: str | None = None
    account: str | None = None
    user_id: int | None = None
    name: str | None = None
    comment: str | None = None
    wckey: str | None = None
    array_inx: str | None = None
    licenses: str | None = None
    req_nodes: str | None = None
    image: str | None = None  # the script's "#HETSCHED image=NAME" line (deploy/form.py)
    container: str | None = None  # --container as given
    clusters: str | None = None  # -M/--clusters as given (a federation's members, comma-separated)
    intent: str | None = None  # the batch script's "#HETSCHED intent ..." line (slurm_plugin.intent), if any
    unanswered: int = 0  # calls the shim answered without the daemon since its last report (metrics only)

    @cached_property
    def gres_items(self) -> tuple[GresCount, ...]:
        """Per-node GRES asked for (``--gres``); raises ValueError on an unreadable string."""
        return parse_tres_per_node(self.gres)

    @cached_property
    def routing_gres(self) -> tuple[GresCount, ...]:
        """The GRES that decide where the job can run: ``--gres``/``--gpus-per-node`` per node, else
        ``--gpus=N`` (``tres_per_job``) as one unit of each per node (a per-job count may span nodes, so only
        the name and type bind); raises ValueError on an unreadable string."""
        if self.gres_items or not self.tres_per_job:
            return self.gres_items
        return tuple(GresCount(g.name, g.type, 1) for g in parse_tres_per_node(self.tres_per_job))

    @cached_property
    def comment_tags(self) -> dict[str, str]:
        """See :func:`slurm_plugin.tags.comment_tags`."""
        return comment_tags(self.comment)

    @cached_property
    def cpus_per_node(self) -> int:
        """CPUs one node must have free: total CPUs spread over the minimum node count, at least 1."""
        per_task = self.cpus_per_task or 1
        total = max(self.min_cpus or 1, per_task * (self.num_tasks or 1))
        return max(math.ceil(total / max(self.min_nodes or 1, 1)), per_task, 1)

    @cached_property
    def memory_per_node_mb(self) -> int:
        if self.mem_per_node_mb:
            return self.mem_per_node_mb
        return (self.mem_per_cpu_mb or 0) * self.cpus_per_node


@dataclass(frozen=True)
class ArchChoice:
    """How the job's ``--constraint`` bounds its architecture.

    ``archs``: the arches it accepts (empty = says nothing about arch); ``routable``: True only when the
    constraint is exactly an OR of arch features (``aarch64|x86_64``), the one form the shim may narrow.
    """

    archs: frozenset[str]
    routable: bool


@lru_cache(maxsize=4096)
def arch_choice(features: str | None) -> ArchChoice:
    """Read the arch part of a constraint expression.

    >>> arch_choice("aarch64|x86_64")
    ArchChoice(archs=frozenset({'aarch64', 'x86_64'}), routable=True)
    >>> arch_choice("aarch64&bigmem").routable
    False
    """
    parsed = try_parse(features)
    if parsed is None or not parsed.names & set(ARCH_FEATURES):
        return ArchChoice(frozenset(), False)  # says nothing about arch, or Slurm refuses it anyway
    archs = parsed.allowed(ARCH_FEATURES)
    alternatives = parsed.alternatives() or ()
    routable = not parsed.bracketed and len(alternatives) > 1 and all(a in ARCH_FEATURES for a in alternatives)
    return ArchChoice(archs, routable)
