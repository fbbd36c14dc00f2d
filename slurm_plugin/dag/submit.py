"""A plan on Slurm: one sbatch (a job array) per unit with ``--dependency=afterok`` on its parents' jobs, a
record of what was submitted, SiteFactor levels for critical units, status, cancel and re-matching.

Submission order is topological, so every parent's job id is known when a child is submitted; a failure part
way cancels what was already submitted and raises (no half-submitted workflow stays behind). The record
(``<state dir>/<workflow>.<first job id>.json``, written atomically) keeps the workflow itself, so
``rematch`` rebuilds the same plan. Decisions on submitted jobs are pure and go through the one applier:

- :func:`priority_actions`: each unit's SiteFactor = its owner's band (what admission set, read from sprio)
  + its level (``critical`` units the top level), so the graph orders its own units, never another band's.
- :func:`rematch_actions`: a unit still pending (also while it waits for its parents) whose class has no room
  for it now moves to the first alternative class with room (``scontrol update partition=.. features=..``);
  the cycle's ``dag`` step (:mod:`slurm_plugin.cycle.dag_step`) asks it every cycle, ``hetsched dag rematch``
  on demand.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..decision.actions import Cause, Decision, MoveJob, SetSiteFactor
from ..fsio import write_file_atomic
from ..site.priority import BAND_SPAN, LEVEL_STEP
from .plan import WorkflowPlan, plan_workflow
from .spec import parse_workflow

STATE_ENV = "HETSCHED_DAG_STATE"
DEFAULT_STATE = Path("/var/lib/hetsched/dag")
FINISHED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")


def state_dir(path: str | Path | None = None) -> Path:
    """Where submitted workflows are recorded: ``path``, else ``$HETSCHED_DAG_STATE``, else /var/lib/hetsched/dag."""
    return Path(path or os.environ.get(STATE_ENV) or DEFAULT_STATE)


@dataclass(frozen=True)
class UnitRecord:
    """One submitted unit: its job id and where it was sent."""

    unit: str
    job_id: int
    partition: str | None
    features: str | None
    after: tuple[str, ...]
    level: int
    critical: bool
    slack_s: float
    tasks: tuple[str, ...]
    width: int


@dataclass(frozen=True)
class DagRecord:
    """A submitted workflow (see the module docstring)."""

    dag_id: str
    workflow: dict
    site: str
    min_unit_s: float
    submitted_at: float
    units: tuple[UnitRecord, ...]

    def unit(self, name: str) -> UnitRecord:
        return next(u for u in self.units if u.unit == name)

    @property
    def job_ids(self) -> tuple[int, ...]:
        return tuple(u.job_id for u in self.units)

    def as_dict(self) -> dict:
        return {"dag_id": self.dag_id, "workflow": self.workflow, "site": self.site, "min_unit_s": self.min_unit_s,
                "submitted_at": self.submitted_at, "units": [u.__dict__ | {"after": list(u.after),
                                                                           "tasks": list(u.tasks)}
                                                             for u in self.units]}

    @classmethod
    def from_dict(cls, d: dict) -> DagRecord:
        units = tuple(UnitRecord(**(u | {"after": tuple(u["after"]), "tasks": tuple(u["tasks"])})) for u in d["units"])
        return cls(d["dag_id"], d["workflow"], d["site"], float(d["min_unit_s"]), float(d["submitted_at"]), units)


def save(record: DagRecord, where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{record.dag_id}.json"
    write_file_atomic(path, json.dumps(record.as_dict(), indent=1) + "\n")
    return path


def load(dag_id: str, where: Path) -> DagRecord:
    """The record of ``dag_id`` (a file name without .json); KeyError naming what exists otherwise."""
    path = where / f"{dag_id}.json"
    if not path.is_file():
        have = sorted(p.stem for p in where.glob("*.json")) if where.is_dir() else []
        raise KeyError(f"no submitted workflow '{dag_id}' in {where} (have: {', '.join(have[-10:]) or 'none'})")
    return DagRecord.from_dict(json.loads(path.read_text()))


def records(where: Path) -> list[DagRecord]:
    """Every record in ``where`` (unreadable files skipped), oldest first."""
    out = []
    for p in sorted(where.glob("*.json")) if where.is_dir() else []:
        try:
            out.append(DagRecord.from_dict(json.loads(p.read_text())))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(out, key=lambda r: r.submitted_at)


def output_arg(job_args: tuple[str, ...], directory: Path) -> str:
    """sbatch's ``--output`` for one unit's job in ``directory``: ``NAME-ARRAYID_TASK.out`` for an array,
    ``NAME-JOBID.out`` otherwise (``%a`` of a job that is no array is Slurm's NO_VAL, 4294967294)."""
    array = any(a.startswith("--array=") for a in job_args)
    return f"--output={directory}/%x-{'%A_%a' if array else '%j'}.out"


def submit_plan(plan: WorkflowPlan, client, where: Path, site_ref: str, min_unit_s: float,
                output_dir: Path | None = None) -> DagRecord:
    """Submit every unit in topological order (see the module docstring); returns the saved record. With
    ``output_dir``, each job writes its output there (:func:`output_arg`)."""
    from ..slurm import SlurmError

    ids: dict[str, int] = {}
    units = []
    try:
        for job in plan.jobs:
            if job.match.chosen is None:
                raise ValueError(f"unit {job.unit.name}: {job.match.reason}")
            dep = (f"--dependency=afterok:{':'.join(str(ids[p]) for p in job.after)}",
                   "--kill-on-invalid-dep=yes") if job.after else ()
            out = (output_arg(job.args, output_dir),) if output_dir is not None else ()
            ids[job.unit.name] = client.sbatch(*job.args, *dep, *out, script=job.script)
            units.append(UnitRecord(job.unit.name, ids[job.unit.name], _arg(job.args, "--partition="),
                                    _arg(job.args, "--constraint="),
                                    job.after, job.level,
                                    job.unit.critical, job.unit.slack, job.unit.tasks, job.unit.width))
    except (SlurmError, ValueError):
        client.cancel(*ids.values())
        raise
    first = min(ids.values())
    record = DagRecord(f"{plan.workflow.name}.{first}", plan.workflow.model_dump(mode="json", by_alias=True),
                       site_ref, min_unit_s, time.time(), tuple(units))
    save(record, where)
    return record


def priority_actions(record: DagRecord, current: Mapping[int, int]) -> Decision:
    """SiteFactor of each unit's job: its band (``current`` SiteFactor // BAND_SPAN; 0 if sprio did not list
    it) x BAND_SPAN + level x LEVEL_STEP, grouped into one action per value (pure)."""
    by_value: dict[int, list[int]] = {}
    for u in record.units:
        band = current.get(u.job_id, 0) // BAND_SPAN
        by_value.setdefault(band * BAND_SPAN + u.level * LEVEL_STEP, []).append(u.job_id)
    return Decision(tuple(SetSiteFactor(tuple(ids), value, f"dag {record.dag_id}: level "
                                        f"{(value % BAND_SPAN) // LEVEL_STEP} in its band (critical path first)",
                                        Cause.GRAPH)
                          for value, ids in sorted(by_value.items())), "dag")


def replan(record: DagRecord, site) -> WorkflowPlan:
    """The plan the record was submitted from (same workflow, site and unit length: deterministic)."""
    return plan_workflow(parse_workflow(record.workflow, record.dag_id), site, min_unit_s=record.min_unit_s)


def live_jobs(jobs) -> dict[int, tuple[str, str, str]]:
    """Job id -> (state, partition, features) of a snapshot's jobs (a pending array is its own job id)."""
    return {j.job_id: (j.state, j.partition, j.features) for j in jobs}


def rematch_actions(record: DagRecord, plan: WorkflowPlan, site, states: Mapping,
                    live: Mapping[int, tuple[str, str, str]], releases: Mapping | None = None) -> Decision:
    """Moves for units not started yet (pending in ``live`` where the plan put them: a unit moved since, by
    this or by anyone, is left alone) whose class is full now and that the matching rule now expects to finish
    sooner elsewhere (``releases``: :func:`releases_of`; pure)."""
    from .match import rematch

    actions = []
    for u in record.units:
        state, partition, features = live.get(u.job_id, ("", "", ""))
        job = plan.job(u.unit)
        if state != "PENDING" or job.match.chosen is None or (partition, features) != (
                u.partition, u.features) or (u.partition, u.features) != (_arg(job.args, "--partition="),
                                                                           _arg(job.args, "--constraint=")):
            continue
        alt = rematch(job.unit, job.match, site, states, releases)
        if alt is None:
            continue
        feats = f"({job.unit.constraint})&{alt.features}" if job.unit.constraint else alt.features
        actions.append(MoveJob(u.job_id, alt.cls.partition, feats,
                               f"dag {record.dag_id}: unit {u.unit} not started and {job.match.chosen.cls.name} "
                               f"has no room for it: moved to {alt.cls.name}", Cause.GRAPH))
    return Decision(tuple(actions), "dag")


def releases_of(snapshot, site) -> dict[str, list]:
    """Per node group, each running job's (seconds from the snapshot until its end time, Slurm's limit; what
    it frees there): the matcher's expected start on a busy class (:func:`.match.expected_start`). A job
    on several nodes frees an equal share on each."""
    import hostlist

    from ..pack.model import Resources

    group_of = {h: g.name for g in site.node_groups for h in g.hostnames}
    out: dict[str, list] = {}
    for j in snapshot.jobs:
        if not j.running or not j.nodes or j.end_time is None:
            continue
        try:
            hosts = hostlist.expand_hostlist(j.nodes)
        except hostlist.BadHostlist:
            continue  # a node list Slurm would not print: no estimate from this job
        n = len(hosts)
        mem_gb = ((j.memory_per_node_mb or 0) * n or (j.memory_per_cpu_mb or 0) * (j.cpus or 1)) / 1024.0
        share = Resources((j.cpus or n) / n, mem_gb / n, sum(g.count for g in j.gres))
        for h in hosts:
            if h in group_of:
                out.setdefault(group_of[h], []).append((float(j.end_time - snapshot.taken_at), share))
    return out


def rematch_all(where: Path, site, snapshot, states: Mapping) -> Decision:
    """:func:`rematch_actions` for every recorded workflow with a job still in ``snapshot`` (others cost
    nothing), against ``site``."""
    live = live_jobs(snapshot.jobs)
    out = Decision((), "dag")
    releases = None
    for rec in records(where):
        if any(live.get(j, ("",))[0] == "PENDING" for j in rec.job_ids):
            releases = releases_of(snapshot, site) if releases is None else releases
            out = out + rematch_actions(rec, replan(rec, site), site, states, live, releases)
    return out


def _arg(args: tuple[str, ...], prefix: str) -> str | None:
    """The value of the sbatch option ``prefix`` (``--partition=``) in ``args``; None without it."""
    return next((a[len(prefix):] for a in args if a.startswith(prefix)), None)


def moved(record: DagRecord, decision: Decision, results) -> DagRecord:
    """The record with the applied moves' new partition/features (the next rematch leaves them be)."""
    done = {a.job_id: a for a, r in zip(decision.actions, results) if isinstance(a, MoveJob) and r.ok}
    if not done:
        return record
    units = tuple(UnitRecord(**(u.__dict__ | {"partition": done[u.job_id].partition,
                                              "features": done[u.job_id].features}))
                  if u.job_id in done else u for u in record.units)
    return DagRecord(record.dag_id, record.workflow, record.site, record.min_unit_s, record.submitted_at, units)


def place_of(job_id: int | None, where: Path) -> dict | None:
    """A job's place in its workflow's graph (for ``why job``): workflow, unit, its tasks, priority level,
    slack, and the units (with job ids) it waits for and that wait for it; None for a job of no recorded
    workflow. ``job_id`` may be a unit's job or an array's job id."""
    if job_id is None:
        return None
    for rec in reversed(records(where)):
        for u in rec.units:
            if u.job_id == job_id:
                return {"dag_id": rec.dag_id, "unit": u.unit, "tasks": list(u.tasks), "width": u.width,
                        "level": u.level, "critical": u.critical, "slack_s": u.slack_s,
                        "after": [[p, rec.unit(p).job_id] for p in u.after],
                        "before": [[c.unit, c.job_id] for c in rec.units if u.unit in c.after]}
    return None


def describe_place(place: dict) -> str:
    """One line of text for :func:`place_of`'s answer."""
    after = ", ".join(f"{u} (job {j})" for u, j in place["after"]) or "nothing"
    before = ", ".join(f"{u} (job {j})" for u, j in place["before"]) or "nothing"
    crit = "critical path" if place["critical"] else f"slack {place['slack_s']:.0f} s"
    return (f"workflow {place['dag_id']}, unit {place['unit']} (tasks {', '.join(place['tasks'])}; width "
            f"{place['width']}), {crit}, level {place['level']} in its band; waits for {after}; {before} waits for it")
