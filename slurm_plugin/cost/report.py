"""Cost per account, partition or workload class of jobs as accounting saw them (pure; `hetsched cost report`):
each node priced by its own group (:func:`job_cost`) beside Slurm's billing TRES (:mod:`slurm_plugin.conf.billing`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..conf.billing import BILLING_SCALE, billing, per_unit

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site
    from ..site.schema import NodeGroup


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
        unit = per_unit(group)
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
