"""The resource requirement graph: a workflow's tasks and their demands as a networkx DAG, with levels,
critical path and slack.

Node attributes: ``task`` (the :class:`~.spec.Task`), ``dur`` (the time the planner assumes for the whole task:
its ``runtime_s``; a task of width w runs its w elements in parallel). Edge attribute ``data_gb``.

Times (:func:`schedule_times`) are the classic CPM quantities with unlimited capacity: ``est`` earliest start,
``lst`` latest start that keeps the workflow's length, ``slack = lst - est`` (0 on a critical path), ``blevel``
the longest path from the task's start to the end of the workflow (what critical-path-first ranks by).
Example: split(60) -> frames(120) -> encode(300) -> merge(30) has length 510 and every slack 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import networkx as nx

from .spec import Task, Workflow


def build_graph(wf: Workflow) -> nx.DiGraph:
    """The requirement graph of a validated workflow (every dependency names a task; no cycle)."""
    g = nx.DiGraph(name=wf.name)
    for t in wf.tasks:
        g.add_node(t.name, task=t, dur=t.runtime_s)
    for t in wf.tasks:
        for e in t.edges:
            g.add_edge(e.task, t.name, data_gb=e.data_gb)
    return g


def levels(g: nx.DiGraph) -> dict[str, int]:
    """Level of every task: 0 for tasks without dependencies, else 1 + the deepest parent. Tasks of one
    level form an antichain (no path between any two of them), so they may all run at once."""
    out: dict[str, int] = {}
    for n in nx.topological_sort(g):
        out[n] = max((out[p] + 1 for p in g.predecessors(n)), default=0)
    return out


@dataclass(frozen=True)
class Times:
    """CPM times of one graph (see the module docstring); ``length`` is the critical path's length and
    ``path`` one critical path, first task first."""

    est: Mapping[str, float]
    lst: Mapping[str, float]
    blevel: Mapping[str, float]
    length: float
    path: tuple[str, ...]

    def slack(self, n: str) -> float:
        return self.lst[n] - self.est[n]


def schedule_times(g: nx.DiGraph, dur: Callable[[str], float] | None = None) -> Times:
    """CPM over ``g`` with durations ``dur(node)`` (default: the ``dur`` attribute)."""
    d = dur or (lambda n: g.nodes[n]["dur"])
    order = list(nx.topological_sort(g))
    est: dict[str, float] = {}
    for n in order:
        est[n] = max((est[p] + d(p) for p in g.predecessors(n)), default=0.0)
    blevel: dict[str, float] = {}
    for n in reversed(order):
        blevel[n] = d(n) + max((blevel[c] for c in g.successors(n)), default=0.0)
    length = max((est[n] + d(n) for n in order), default=0.0)
    lst = {n: length - blevel[n] for n in order}
    path: list[str] = []
    cur = min((n for n in order if g.in_degree(n) == 0 and abs(blevel[n] - length) < 1e-9), default=None)
    while cur is not None:
        path.append(cur)
        cur = next((c for c in g.successors(cur) if abs(est[cur] + d(cur) - est[c]) < 1e-9
                    and abs(blevel[c] - (blevel[cur] - d(cur))) < 1e-9), None)
    return Times(est, lst, blevel, length, tuple(path))


def task_of(g: nx.DiGraph, n: str) -> Task:
    return g.nodes[n]["task"]
