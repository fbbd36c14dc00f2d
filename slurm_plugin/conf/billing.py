"""What a job costs, in Slurm's own accounting: TRESBillingWeights rendered from the site's node cost (pure; the
same arithmetic prices job records in :mod:`slurm_plugin.cost.report`).

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
the node-count-weighted mean (:func:`partition_weights`); :func:`slurm_plugin.cost.report.job_cost` prices each node by its own group
from the job's node list, so the report states both and where they differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site
    from ..site.schema import NodeGroup

BILLING_SCALE = 1000  # billing units per currency unit: billing=N held one hour costs N / 1000


def per_unit(group: NodeGroup) -> dict[str, float]:
    """Cost per hour of one CPU, one GB of memory and one device of each GRES name, on ``group``'s nodes."""
    cost = group.cost_per_hour
    out = {"CPU": cost / (group.cpu.cores * group.cpu.threads_per_core), "Mem": cost / group.memory_gb}
    for name, _type, count in group.gres:
        out[f"GRES/{name}"] = cost / count
    return out


def partition_weights(site: Site, partition: str) -> dict[str, float]:
    """TRES -> billing weight (per CPU, per GB, per device) of ``partition``: the node-count-weighted mean of
    its groups' :func:`per_unit` costs, times :data:`BILLING_SCALE`; empty when its nodes cost nothing."""
    part = next(p for p in site.partitions if p.name == partition)
    groups = [site.group(name) for name in part.node_groups]
    nodes = sum(g.count for g in groups)
    if not any(g.cost_per_hour for g in groups):
        return {}
    weights: dict[str, float] = {}
    for g in groups:
        for tres, cost in per_unit(g).items():
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
