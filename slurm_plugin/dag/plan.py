"""A workflow's plan: requirement graph -> units -> matches -> one sbatch request per unit (pure, no Slurm).

``plan_workflow(wf, site)`` is what ``hetsched dag plan`` (and ``dag submit --dry-run``) prints and ``dag submit``
submits. Its form (:func:`.form.choose_form`, the rule the simulator's ``rrg`` uses) is either one job holding
the widest level on one node group (:func:`merged_job`: the levels run one after another inside it, each task
element as a job step) or units in topological order, each with its sbatch arguments (array, partition, features, GRES, time, dependencies by
unit name; :mod:`.submit` turns the names into job ids) and the script its elements run. Priority: a unit's
SiteFactor *level* inside the band admission gave its owner: critical units the top level, the others lower
by slack (:func:`priority_level`), so the graph orders its own units and never outranks another band.
"""

from __future__ import annotations

import math
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import networkx as nx

from ..pack.classes import GroupState
from ..site.priority import RANK_LEVELS
from .form import LAUNCH_S, Form, by_level, choose_form, groups_of
from .graph import build_graph, schedule_times, task_of
from .match import Match, equivalents, match_units, request
from .spec import Workflow, slurm_time
from .units import MIN_UNIT_S, Unit, decompose

MAX_LEVEL = RANK_LEVELS - 1


@dataclass(frozen=True)
class UnitJob:
    """What to submit for one unit: ``args`` for sbatch (without ``--dependency``), the parents by unit name,
    the batch script and the SiteFactor level inside the owner's band."""

    unit: Unit
    match: Match
    args: tuple[str, ...]
    after: tuple[str, ...]
    script: str
    level: int


@dataclass
class WorkflowPlan:
    """The whole plan, and how long each part took (seconds of CPU time, ``timings``)."""

    workflow: Workflow
    graph: nx.DiGraph
    unit_graph: nx.DiGraph
    units: tuple[Unit, ...]
    jobs: tuple[UnitJob, ...]
    length_s: float
    critical_path: tuple[str, ...]
    form: Form
    timings: dict[str, float] = field(default_factory=dict)

    def job(self, unit: str) -> UnitJob:
        return next(j for j in self.jobs if j.unit.name == unit)

    def as_dict(self) -> dict:
        return {
            "workflow": self.workflow.name, "tasks": len(self.workflow.tasks), "units": len(self.units),
            "critical_path_s": self.length_s, "critical_path": list(self.critical_path), "form": self.form.as_dict(),
            "timings_s": self.timings,
            "jobs": [{"unit": j.unit.name, "tasks": list(j.unit.tasks), "width": j.unit.width, "pack": j.unit.pack,
                      "level": j.unit.level, "est_s": j.unit.est, "slack_s": j.unit.slack,
                      "critical": j.unit.critical, "runtime_s": j.unit.runtime_s, "after": list(j.after),
                      "class": j.match.chosen.cls.name if j.match.chosen else None,
                      "alternatives": [o.cls.name for o in j.match.alternatives], "reason": j.match.reason,
                      "priority_level": j.level, "sbatch": list(j.args)} for j in self.jobs],
        }


def priority_level(unit: Unit, length_s: float) -> int:
    """SiteFactor level inside the owner's band: :data:`MAX_LEVEL` for a critical unit, lower the more slack
    (linear in slack / critical path length, never below 0)."""
    if unit.critical or length_s <= 0:
        return MAX_LEVEL
    return max(0, int(MAX_LEVEL * (1.0 - min(unit.slack / length_s, 1.0))) - 1)


def _script(wf: Workflow, g: nx.DiGraph, unit: Unit) -> str:
    """The batch script: element i of the array runs task elements i*pack .. i*pack+pack-1 (below the task's
    width), each running the chain's commands in order; ``HETSCHED_TASK_INDEX`` is the task element."""
    funcs = []
    for k, name in enumerate(unit.tasks):
        funcs.append(f"task_{k}() {{ # {name}\n{task_of(g, name).command}\n}}")
    calls = "\n".join(f"  task_{k} || exit $?" for k in range(len(unit.tasks)))
    return (f"#!/bin/bash\n# hetsched dag: workflow {wf.name}, unit {unit.name} ({', '.join(unit.tasks)})\n"
            + "\n".join(funcs) + "\n"
            f"first=$(( ${{SLURM_ARRAY_TASK_ID:-0}} * {unit.pack} ))\n"
            f"for (( i = first; i < first + {unit.pack} && i < {unit.task_width}; i++ )); do\n"
            f"  export HETSCHED_TASK_INDEX=$i\n{calls}\ndone\n")


def _args(wf: Workflow, unit: Unit, match: Match) -> tuple[str, ...]:
    args = [f"--job-name={wf.name}.{unit.name}", f"--nodes={unit.nodes}", "--ntasks-per-node=1",
            f"--cpus-per-task={unit.cores}", f"--mem={int(unit.mem_gb * 1024)}M" if unit.mem_gb > 0 else "--mem=0",
            f"--time={slurm_time(unit.limit_s)}"]
    if unit.mem_gb <= 0:
        args.append("--exclusive")  # the merged form holds whole nodes
    if unit.width > 1:
        args.append(f"--array=0-{unit.width - 1}")
    if match.chosen is not None:
        parts, feats = request(equivalents(unit, match))
        args.append(f"--partition={parts}")
        args.append(f"--constraint=({unit.constraint})&{feats}" if unit.constraint else f"--constraint={feats}")
    if unit.accel:
        kind, count, _ = unit.accel
        args.append(f"--gres={kind}:{count}")  # untyped: the type is a feature, so a move can change it
    if unit.wclass:
        args.append(f"--comment=class={unit.wclass}")
    return tuple(args)


def merged_unit(wf: Workflow, g: nx.DiGraph, form: Form, site) -> Unit:
    """The one job of the merged form: every task, ``form.nodes`` whole nodes of ``form.group`` (``mem_gb`` 0:
    all of each node's memory); its limit holds every task's elements in waves of the job's width, in series."""
    grp = next(x for x in site.node_groups if x.name == form.group)
    width = form.nodes * form.cores
    limit = sum(math.ceil(t.array * t.cores * t.nodes / width) * t.limit_s for t in wf.tasks)  # waves, in series
    return Unit(name="all", tasks=tuple(nx.topological_sort(g)), task_width=1, width=1, pack=1, nodes=form.nodes,
                cores=form.cores, mem_gb=0.0, accel=None, arch=(grp.cpu.arch,), constraint=None, wclass=None,
                runtime_s=form.merged_s, limit_s=limit, blevel=form.merged_s)


def _merged_script(wf: Workflow, unit: Unit) -> str:
    """The merged job's script: level after level, every element of every task of a level as a job step
    (``srun --exact``: Slurm queues a step until the job's cores free up); a failed step fails the job after
    its level (so ``afterok`` children do not run). At most as many steps at once as the job has room for."""
    lines = [f"#!/bin/bash\n# hetsched dag: workflow {wf.name}, one job (merged form): {unit.nodes} node(s) x "
             f"{unit.cores} cores, {len(unit.tasks)} task(s)", "fail=0"]
    index = {name: k for k, name in enumerate(unit.tasks)}
    for name, k in index.items():
        lines.append(f"task_{k}() {{ # {name}\n{next(t for t in wf.tasks if t.name == name).command}\n}}")
    for lvl, tasks in sorted(by_level(wf).items()):
        lines.append(f"# level {lvl}: {', '.join(t.name for t in tasks)}\npids=()")
        for t in tasks:
            k = index[t.name]
            slots = max(1, unit.nodes * unit.cores // (t.cores * t.nodes))
            lines.append(
                f"for (( i = 0; i < {t.array}; i++ )); do\n"
                f"  while (( $(jobs -rp | wc -l) >= {slots} )); do wait -n; done\n"
                f"  HETSCHED_TASK_INDEX=$i srun --exact --nodes={t.nodes} --ntasks={t.nodes} "
                f"--cpus-per-task={t.cores} --mem={int(t.mem_gb * 1024)}M --job-name={t.name} "
                f"bash -c \"$(declare -f task_{k}); task_{k}\" &\n  pids+=($!)\ndone")
        lines.append('for p in "${pids[@]}"; do wait "$p" || fail=1; done\n'
                     f'if (( fail )); then echo "hetsched dag: a task of level {lvl} failed" >&2; exit 1; fi')
    return "\n".join(lines) + "\n"


def plan_workflow(wf: Workflow, site, state: Mapping[str, GroupState] | None = None,
                  min_unit_s: float = MIN_UNIT_S, launch_s: float = LAUNCH_S) -> WorkflowPlan:
    """Build the plan (see the module docstring). Times are CPU seconds per part."""
    t0 = time.process_time()
    g = build_graph(wf)
    t1 = time.process_time()
    units, ug = decompose(g, min_unit_s)
    form = choose_form(wf, groups_of(site), launch_s, min_unit_s, (units, ug))
    if form.merged:
        one = merged_unit(wf, g, form, site)
        units, ug = (one,), nx.DiGraph()
        ug.add_node(one.name, dur=one.runtime_s, unit=one)
    times = schedule_times(ug)
    t2 = time.process_time()
    matches = match_units(units, site, state, pool=form.group if form.merged else None)
    t3 = time.process_time()
    jobs = tuple(UnitJob(u, matches[u.name], _args(wf, u, matches[u.name]), u.after,
                         _merged_script(wf, u) if form.merged else _script(wf, g, u),
                         priority_level(u, times.length)) for u in units)
    t4 = time.process_time()
    return WorkflowPlan(wf, g, ug, units, jobs, times.length, times.path, form,
                {"graph": t1 - t0, "decompose": t2 - t1, "match": t3 - t2, "submit_plan": t4 - t3, "total": t4 - t0})


def shell_line(job: UnitJob) -> str:
    """The sbatch command line of a unit, for ``dag plan`` (dependencies shown by unit name)."""
    dep = [f"--dependency=afterok:<{','.join(job.after)}>"] if job.after else []
    return " ".join(shlex.quote(a) for a in ("sbatch", *job.args, *dep, f"<script {job.unit.name}>"))
