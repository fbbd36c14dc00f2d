"""A workflow's form: one job holding its widest level, or split units. One rule for ``dag submit`` and the
simulator's ``rrg`` (and the one-job shape ``monolithic`` uses).

- :func:`one_job_shape`: where one job holding the whole workflow goes: the node group that can run every task
  with the most cores (arch, accelerator kind/type/count, cores per node), whole nodes for the widest level's
  cores, at most the group.
- :func:`choose_form`: from the planner's run time estimates (``runtime_s``), with nothing else queued:

  - merged: ``launch_s`` + the sum over levels of max(longest task, level core-seconds / the job's cores);
  - split: the critical path of :func:`.units.decompose`'s units, each taking (element run time +
    ``launch_s``) x ceil(unit cores / the site's cores) (waves when it is wider than the site);

  merged when merged < split (a tie stays split: units keep the matcher), no task needs an accelerator (one job
  would hold the accelerators through every CPU level, which this estimate does not charge: on the demo site's
  one H100 node that doubled the pipelines' JCT) and no task has its own ``--constraint`` (the one job could
  not honour it per task). ``Form.reason`` says which clause decided.

``groups``: node groups with ``name``, ``count``, ``cores`` (CPUs per node), ``arch``, ``gres`` ((kind, type) ->
count per node) and ``memory_gb``: the simulator's :class:`~slurm_plugin.sim.machine.GroupSpec` or
:func:`groups_of` a site.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .graph import build_graph, levels, schedule_times
from .spec import Task, Workflow
from .units import MIN_UNIT_S, decompose

LAUNCH_S = 1.0  # what Slurm spends to schedule, prolog and launch one job (the simulator's --launch-s default)


@dataclass(frozen=True)
class GroupShape:
    """A node group as the form rule sees it (see the module docstring)."""

    name: str
    count: int
    cores: int
    arch: str
    gres: dict[tuple[str, str], int]
    memory_gb: float


def groups_of(site) -> tuple[GroupShape, ...]:
    """The site's node groups (CPUs per node = cores x threads, as slurm.conf declares them)."""
    return tuple(GroupShape(g.name, g.count, g.cpu.cores * g.cpu.threads_per_core, g.cpu.arch,
                            {(n, t): c for n, t, c in g.gres}, float(g.memory_gb)) for g in site.node_groups)


@dataclass(frozen=True)
class Form:
    """``merged``: one job of ``nodes`` x ``cores`` on node group ``group``; else split units. Both expected run
    times standalone (s; ``merged_s`` is inf when no node group can hold every task) and why."""

    merged: bool
    merged_s: float
    split_s: float
    reason: str
    group: str | None = None
    nodes: int = 0
    cores: int = 0

    def as_dict(self) -> dict:
        return {"merged": self.merged, "merged_s": self.merged_s if math.isfinite(self.merged_s) else None,
                "split_s": self.split_s, "group": self.group, "nodes": self.nodes, "cores_per_node": self.cores,
                "reason": self.reason}


def by_level(wf: Workflow) -> dict[int, list[Task]]:
    """Tasks per level (:func:`.graph.levels`)."""
    lv = levels(build_graph(wf))
    out: dict[int, list[Task]] = {}
    for t in wf.tasks:
        out.setdefault(lv[t.name], []).append(t)
    return out


def one_job_shape(wf: Workflow, groups: Sequence) -> tuple[int, int] | None:
    """(index in ``groups``, nodes) of one job holding the whole workflow (see the module docstring); None: no
    node group can run every task."""
    widest = max(sum(t.array * t.cores * t.nodes for t in ts) for ts in by_level(wf).values())
    archs = set.intersection(*[set(t.arch) for t in wf.tasks if t.arch] or [set()])
    accel_tasks = [t for t in wf.tasks if t.accel]
    need_acc = max((t.accel[1].count for t in accel_tasks), default=0)
    types = set.intersection(*[set(t.accel[1].types) for t in accel_tasks if t.accel[1].types] or [set()])
    ok = []
    for gi, grp in enumerate(groups):
        if archs and grp.arch not in archs:
            continue
        if need_acc:
            devs = [(tp, c) for (kind, tp), c in grp.gres.items() if kind == accel_tasks[0].accel[0]]
            if not any(c >= need_acc and (not types or tp in types) for tp, c in devs):
                continue
        if grp.cores < max(t.cores for t in wf.tasks):
            continue
        ok.append(gi)
    if not ok:
        return None
    gi = max(ok, key=lambda i: (groups[i].count * groups[i].cores, -i))
    return gi, min(math.ceil(widest / groups[gi].cores), groups[gi].count)


def choose_form(wf: Workflow, groups: Sequence, launch_s: float = LAUNCH_S, min_unit_s: float = MIN_UNIT_S,
                decomposed: tuple | None = None) -> Form:
    """The rule (see the module docstring). ``decomposed``: :func:`.units.decompose`'s answer for ``wf`` at
    ``min_unit_s`` when the caller has it already."""
    units, ug = decomposed or decompose(build_graph(wf), min_unit_s)
    total = max(float(sum(grp.count * grp.cores for grp in groups)), 1.0)
    dur = {u.name: (u.runtime_s + launch_s) * math.ceil(u.width * u.nodes * u.cores / total) for u in units}
    split = schedule_times(ug, lambda n: dur[n]).length
    accel = next((t.name for t in wf.tasks if t.accel), None)
    if accel is not None:
        return Form(False, math.inf, split, f"split: task {accel} needs an accelerator (one job would hold it "
                                            "through every level)")
    cons = next((t.name for t in wf.tasks if t.constraint), None)
    if cons is not None:
        return Form(False, math.inf, split, f"split: task {cons} has its own --constraint")
    shape = one_job_shape(wf, groups)
    if shape is None:
        return Form(False, math.inf, split, "split: no node group can run every task")
    gi, nodes = shape
    grp = groups[gi]
    width = nodes * grp.cores
    merged = launch_s + sum(max(max(t.runtime_s for t in ts), sum(t.runtime_s * t.array * t.cores * t.nodes
                                                                  for t in ts) / width)
                            for ts in by_level(wf).values())
    est = (f"one job of {nodes} x {grp.cores} cores on {grp.name} expected {merged:.0f} s alone, split units "
           f"{split:.0f} s ({len(units)} unit(s), {launch_s:g} s launch per job)")
    if merged < split:
        return Form(True, merged, split, "merged: " + est, grp.name, nodes, grp.cores)
    return Form(False, merged, split, "split: " + est, grp.name, nodes, grp.cores)


__all__ = ["Form", "GroupShape", "LAUNCH_S", "by_level", "choose_form", "groups_of", "one_job_shape"]
