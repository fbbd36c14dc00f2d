"""What a job costs, in Slurm's own accounting: TRESBillingWeights rendered from the site's node cost, and the
same arithmetic applied to job records (pure; `hetsched cost report` reads sacct or a simulation).

A node group's ``cost_per_hour`` is shared out over what a job can hold of one node: a job holding a fraction
of a node's CPUs, memory or accelerators (the largest of the three) pays that fraction of the node's cost per
hour. Slurm computes exactly this when each partition gets ``TRESBillingWeights="CPU=c,Mem=mG,GRES/gpu=g"``
with c = cost/CPUs, m = cost/GB, g = cost/GPUs of its nodes and ``PriorityFlags=MAX_TRES`` (the billing TRES is
then the largest weighted CPU, memory or GRES count of the job). Weights are scaled by :data:`BILLING_SCALE`,
so one billing unit held for an hour costs 1/1000 of the site's currency, and ``sreport`` /
``sacct -o AllocTRES`` (``billing=N``) show the cost in those units.

They are rendered where Slurm keeps accounting (slurmdbd: the container cluster's layout), the only place
``sreport`` and fair-share can use them; slurmctld refuses to track GRES TRES without slurmdbd.

Slurm's weights are per partition. A partition whose node groups cost differently per CPU, GB or device gets
the node-count-weighted mean (:func:`partition_weights`); :func:`job_cost` prices each node by its own group
from the job's node list, so the report states both and where they differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site
    from ..site.schema import NodeGroup

BILLING_SCALE = 1000  # billing units per currency unit: billing=N held one hour costs N / 1000


def _per_unit(group: NodeGroup) -> dict[str, float]:
    """Cost per hour of one CPU, one GB of memory and one device of each GRES name, on ``group``'s nodes."""
    cost = group.cost_per_hour
    out = {"CPU": cost / (group.cpu.cores * group.cpu.threads_per_core), "Mem": cost / group.memory_gb}
    for name, _type, count in group.gres:
        out[f"GRES/{name}"] = cost / count
    return out


def partition_weights(site: Site, partition: str) -> dict[str, float]:
    """TRES -> billing weight (per CPU, per GB, per device) of ``partition``: the node-count-weighted mean of
    its groups' :func:`_per_unit` costs, times :data:`BILLING_SCALE`; empty when its nodes cost nothing."""
    part = next(p for p in site.partitions if p.name == partition)
    groups = [site.group(name) for name in part.node_groups]
    nodes = sum(g.count for g in groups)
    if not any(g.cost_per_hour for g in groups):
        return {}
    weights: dict[str, float] = {}
    for g in groups:
        for tres, cost in _per_unit(g).items():
            weights[tres] = weights.get(tres, 0.0) + cost * g.count / nodes * BILLING_SCALE
    return weights


def billing_weights_text(weights: Mapping[str, float]) -> str:
    """slurm.conf's ``TRESBillingWeights`` value: ``CPU=31.25,Mem=7.8125G,GRES/gpu=500`` (memory per GB)."""
    return ",".join(f"{tres}={value:.6g}{'G' if tres == 'Mem' else ''}" for tres, value in weights.items())


def site_billing_weights(site: Site) -> dict[str, str]:
    """Partition -> its ``TRESBillingWeights`` text, for the partitions whose nodes cost anything."""
    out = {}
    for p in site.partitions:
        weights = partition_weights(site, p.name)
        if weights:
            out[p.name] = billing_weights_text(weights)
    return out


def billing(weights: Mapping[str, float], cpus: float, mem_gb: float, gres: Mapping[str, float]) -> float:
    """Slurm's billing TRES of a job holding ``cpus``, ``mem_gb`` and ``gres`` (name -> devices) in all, under
    ``weights`` with PriorityFlags=MAX_TRES: the largest weighted count."""
    values = [cpus * weights.get("CPU", 0.0), mem_gb * weights.get("Mem", 0.0)]
    values += [count * weights.get(f"GRES/{name}", 0.0) for name, count in gres.items()]
    return max(values, default=0.0)


@dataclass(frozen=True)
class JobUse:
    """One finished (or running) job as accounting saw it: who and where, what it held per node, how long."""

    job_id: str
    account: str
    partition: str
    workload_class: str
    nodes: tuple[str, ...]
    cpus: float            # in all
    mem_gb: float          # in all
    gres: Mapping[str, float]  # name -> devices in all
    elapsed_s: float
    billing: float | None = None  # Slurm's billing TRES (sacct AllocTRES), if recorded


def job_cost(site: Site, use: JobUse, group_of: Mapping[str, NodeGroup]) -> float:
    """What ``use`` cost in the site's currency: on each of its nodes, the largest fraction of that node's CPUs,
    memory or devices the job held there (its totals spread evenly over its nodes), times the node's
    group cost per hour, times the hours. Nodes the site does not know cost nothing."""
    count = max(len(use.nodes), 1)
    total = 0.0
    for node in use.nodes:
        group = group_of.get(node)
        if group is None:
            continue
        unit = _per_unit(group)
        total += billing(unit, use.cpus / count, use.mem_gb / count, {k: v / count for k, v in use.gres.items()})
    return total * use.elapsed_s / 3600.0


@dataclass(frozen=True)
class CostRow:
    """Cost of one group of jobs (``by``: the grouping key values): ``cost`` priced per node from the site,
    ``billed`` from Slurm's billing TRES (None when no job of the group has one), in the site's currency."""

    key: tuple[str, ...]
    jobs: int
    node_hours: float
    cost: float
    billed: float | None


def cost_report(site: Site, uses: Iterable[JobUse], by: tuple[str, ...] = ("account",)) -> list[CostRow]:
    """Jobs grouped by ``by`` (any of ``account``, ``partition``, ``class``), most expensive first."""
    fields = {"account": "account", "partition": "partition", "class": "workload_class"}
    unknown = [b for b in by if b not in fields]
    if unknown:
        raise ValueError(f"cannot group by {', '.join(unknown)} (known: {', '.join(fields)})")
    group_of = {h: g for g in site.node_groups for h in g.hostnames}
    acc: dict[tuple[str, ...], list] = {}
    for use in uses:
        key = tuple(getattr(use, fields[b]) or "-" for b in by)
        row = acc.setdefault(key, [0, 0.0, 0.0, None])
        row[0] += 1
        row[1] += len(use.nodes) * use.elapsed_s / 3600.0
        row[2] += job_cost(site, use, group_of)
        if use.billing is not None:
            row[3] = (row[3] or 0.0) + use.billing * use.elapsed_s / 3600.0 / BILLING_SCALE
    rows = [CostRow(k, n, hours, cost, billed) for k, (n, hours, cost, billed) in acc.items()]
    return sorted(rows, key=lambda r: (-r.cost, r.key))
