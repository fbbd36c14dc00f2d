"""Decomposition of a requirement graph into units: the Slurm jobs (arrays) that run in parallel.

Two rules keep jobs from being tiny (Slurm spends about a second of scheduling, prolog and launch on every job,
so a 4-s task as its own job wastes a fifth of its node time):

1. **Chain merging**: a task whose only parent has it as its only child, with the same resource request and
   width, joins its parent's unit when either of them is shorter than ``min_unit_s``; the unit's elements run
   the chain's commands one after the other (element i of the child after element i of the parent, which
   ``afterok`` on the whole parent array would otherwise delay until every element of the parent ended).
2. **Array packing**: a unit of width W whose element runs shorter than ``min_unit_s`` runs k = ceil(min_unit_s
   / runtime) elements in a row per array element, so the array has ceil(W / k) elements.

(Whether a workflow runs as these units at all or as one job holding its widest level is :mod:`.form`'s rule.)

Units of one level form an antichain of the unit graph (no path between them) and run in parallel; every unit
gets its CPM times (``est``, ``slack``, ``blevel``) over the unit graph; ``critical`` marks zero slack.
Example: a TPC-H stage of 200 tasks of 4 s becomes an array of 25 elements of 8 tasks (32 s) at
``min_unit_s=30``; a chain of 1-task stages becomes one job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import networkx as nx

from .graph import levels, schedule_times, task_of
from .spec import Task

MIN_UNIT_S = 10.0  # ten times the ~1 s Slurm spends to schedule and launch a job
EPS = 1e-6


@dataclass(frozen=True)
class Unit:
    """One Slurm job (an array of ``width`` elements): each element runs ``pack`` consecutive elements of the
    chain ``tasks`` (of the original width ``task_width``), each needing ``nodes`` x (``cores``, ``mem_gb``,
    ``accel``) for about ``runtime_s`` (the whole element), killed after ``limit_s``."""

    name: str
    tasks: tuple[str, ...]
    task_width: int
    width: int
    pack: int
    nodes: int
    cores: int
    mem_gb: float
    accel: tuple[str, int, tuple[str, ...]] | None  # (kind, count per node, accepted types)
    arch: tuple[str, ...]
    constraint: str | None
    wclass: str | None
    runtime_s: float
    limit_s: float
    after: tuple[str, ...] = ()
    data_gb: float = 0.0
    level: int = 0
    est: float = 0.0
    slack: float = 0.0
    blevel: float = 0.0

    @property
    def critical(self) -> bool:
        return self.slack <= EPS

    @property
    def core_s(self) -> float:
        """Core-seconds of the whole unit (every element)."""
        return self.runtime_s * self.width * self.nodes * self.cores


def signature(t: Task) -> tuple:
    """What must be equal for two tasks to share a job: resources, accelerator, arch, constraint, class."""
    acc = t.accel
    return (t.nodes, t.cores, t.mem_gb, (acc[0], acc[1].count, acc[1].types) if acc else None, t.arch,
            t.constraint, t.workload_class, t.array)


def _chains(g: nx.DiGraph, min_unit_s: float) -> list[list[str]]:
    """Tasks grouped into chains (topological order inside each chain; chains in topological order)."""
    head: dict[str, list[str]] = {}
    chains: list[list[str]] = []
    for n in nx.topological_sort(g):
        preds = list(g.predecessors(n))
        if len(preds) == 1 and g.out_degree(preds[0]) == 1:
            p = preds[0]
            chain = head[p]
            t, tp = task_of(g, n), task_of(g, p)
            chain_s = sum(task_of(g, m).runtime_s for m in chain)
            if signature(t) == signature(tp) and (chain_s < min_unit_s or t.runtime_s < min_unit_s):
                chain.append(n)
                head[n] = chain
                continue
        head[n] = [n]
        chains.append(head[n])
    return chains


def _unit(g: nx.DiGraph, chain: list[str], min_unit_s: float) -> Unit:
    first = task_of(g, chain[0])
    run = sum(task_of(g, n).runtime_s for n in chain)
    limit = sum(task_of(g, n).limit_s for n in chain)
    w = first.array
    k = min(w, math.ceil(min_unit_s / run)) if run < min_unit_s and w > 1 else 1
    acc = first.accel
    name = chain[0] if len(chain) == 1 else f"{chain[0]}+{len(chain) - 1}"
    data = sum(d for p, _, d in g.in_edges(chain[0], data="data_gb") if d)
    return Unit(name=name, tasks=tuple(chain), task_width=w, width=math.ceil(w / k), pack=k, nodes=first.nodes,
                cores=first.cores, mem_gb=first.mem_gb, accel=(acc[0], acc[1].count, acc[1].types) if acc else None,
                arch=first.arch, constraint=first.constraint, wclass=first.workload_class, runtime_s=run * k,
                limit_s=limit * k, data_gb=data)


def decompose(g: nx.DiGraph, min_unit_s: float = MIN_UNIT_S) -> tuple[tuple[Unit, ...], nx.DiGraph]:
    """Units in topological order and the unit graph (node attribute ``unit``); see the module docstring."""
    chains = _chains(g, min_unit_s)
    unit_of = {n: i for i, c in enumerate(chains) for n in c}
    units = [_unit(g, c, min_unit_s) for c in chains]
    ug = nx.DiGraph()
    for u in units:
        ug.add_node(u.name, dur=u.runtime_s)
    for a, b in g.edges:
        ua, ub = unit_of[a], unit_of[b]
        if ua != ub:
            ug.add_edge(units[ua].name, units[ub].name)
    times = schedule_times(ug)
    lv = levels(ug)
    out = []
    for u in units:
        u = replace(u, after=tuple(sorted(ug.predecessors(u.name))), level=lv[u.name], est=times.est[u.name],
                    slack=times.slack(u.name), blevel=times.blevel[u.name])
        ug.nodes[u.name]["unit"] = u
        out.append(u)
    return tuple(out), ug
