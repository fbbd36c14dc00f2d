"""DAG workloads in the simulator at task level, under four ways of turning workflows into Slurm jobs.

- ``monolithic``: one job per workflow, sized for its widest level (cores of the level's tasks together, whole
  nodes, at most one node group of nodes), on the node group that can run every task; it runs the levels one
  after another, each taking max(longest element, level core-seconds / job cores).
- ``naive``: one job per task element, each waiting for all elements of its parents (``afterok``), FIFO.
- ``critical-path``: the same jobs, the element with the longest path to its workflow's end first (HLFET).
- ``rrg``: the requirement-graph layer as ``hetsched dag submit`` runs it: units (chains merged, arrays
  packed to ``min_unit_s``), each on the class the matcher chose (:func:`.match.match_units`) and every class
  it cannot tell from it but by when it frees (:func:`.match.equivalents`: arch and GRES types), SiteFactor level
  by slack (critical first), then FIFO; every cycle a unit not started whose class has no room moves where the
  same rule now expects it to finish first (:mod:`.simrematch`, as the daemon's ``dag`` step does).
- ``rrg-sjf``: rrg with workflows of less work first (then by level): what a site that ranks whole
  workflows (shortest first, as the tuner's SJF would) gets from the graph layer.

Every Slurm job (task element, unit element or workflow) also pays ``launch_s`` of scheduling and launch.
Metrics per workflow: JCT = last end - arrival; wait = JCT - its own critical path (element durations, no
queue, no launch cost, each task at the best speed factor it may get on the site): the time lost to queueing,
launching, running sized down or on a slower class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..sim.engine import Engine
from ..sim.hooks import ScoreRanking
from ..sim.machine import Machine, homogeneous, machine_from_site
from ..sim.packing import speed_matrix
from ..workload.jobs import JobTable, arch_mask
from .graph import build_graph, schedule_times
from .form import LAUNCH_S, by_level, choose_form, one_job_shape
from .match import equivalents, match_units
from .plan import MAX_LEVEL, priority_level
from .simrematch import DagRematch, RowMatch
from .spec import Task, Workflow
from .streams import Arrival
from .units import MIN_UNIT_S, decompose

POLICIES = ("monolithic", "naive", "critical-path", "rrg", "rrg-sjf")
TPCH_MACHINE = (25, 4)  # 100 executors as 25 nodes of 4 cores (Decima's setting has 100 executors at most)


@dataclass
class _JobRows:
    """Job rows being built; ``after`` holds row indices, ``owner`` the workflow index, ``score`` the rank."""

    cols: dict[str, list]
    after: list[list[int]]
    owner: list[int]
    score: list[float]

    def add(self, submit: float, run: float, limit: float, nodes: int, cores: int, mem: float,
            gres: tuple[int, int, int], amask: int, wclass: int, after: list[int], owner: int, score: float) -> int:
        c = self.cols
        i = len(self.owner)
        for k, v in (("id", i + 1), ("submit", submit), ("run", run), ("limit", max(limit, run)), ("nodes", nodes),
                     ("cores", cores), ("mem_gb", mem), ("gres_name", gres[0]), ("gres_type", gres[1]),
                     ("gres_count", gres[2]), ("arch_mask", amask), ("wclass", wclass)):
            c[k].append(v)
        self.after.append(after)
        self.owner.append(owner)
        self.score.append(score)
        return i


class _Names:
    """Index tables for GRES names, GRES type options and workload classes, shared by all rows."""

    def __init__(self, classes: Sequence[str]):
        self.gres: list[str] = []
        self.types: list[str] = []
        self.classes = list(classes)

    def gres_of(self, task: Task, types: tuple[str, ...] | None = None) -> tuple[int, int, int]:
        acc = task.accel
        if acc is None:
            return (-1, -1, 0)
        kind, req = acc
        types = req.types if types is None else types
        if kind not in self.gres:
            self.gres.append(kind)
        t = -1
        if types:
            key = "|".join(types)
            if key not in self.types:
                self.types.append(key)
            t = self.types.index(key)
        return (self.gres.index(kind), t, req.count)

    def wclass(self, name: str | None) -> int:
        return self.classes.index(name) if name in self.classes else -1


def _standalone(a: Arrival, site=None) -> float:
    """The workflow's critical path with unlimited capacity, each task at the best speed factor it may get."""
    g = build_graph(a.workflow)
    speed = {n: 1.0 for n in g}
    if site is not None:
        from ..pack.classes import classes_from_site
        from .match import feasible

        _, classes = classes_from_site(site)
        units, _ = decompose(g, min_unit_s=0.0)
        for u in units:
            cands, _ = feasible(u, site, classes)
            if u.wclass and cands:
                speed[u.tasks[0]] = max(c.speed_for(u.wclass) for c in cands) or 1.0
    return schedule_times(g, lambda n: float(a.durations[n].max()) / speed[n]).length


def _element_rows(rows: _JobRows, names: _Names, k: int, a: Arrival, score_of, launch_s: float) -> None:
    """naive / critical-path: one job per task element; ``score_of(task name)`` ranks it."""
    first: dict[str, list[int]] = {}
    for t in _topo(a.workflow):
        parents = [r for e in t.edges for r in first[e.task]]
        first[t.name] = [rows.add(a.arrival, float(d) + launch_s, t.limit_s + launch_s, t.nodes, t.cores,
                                  t.mem_gb, names.gres_of(t), arch_mask(t.arch), names.wclass(t.workload_class),
                                  parents, k, score_of(t.name)) for d in a.durations[t.name]]


def _topo(wf: Workflow) -> list[Task]:
    import networkx as nx

    g = build_graph(wf)
    return [g.nodes[n]["task"] for n in nx.topological_sort(g)]


def _rrg_rows(rows: _JobRows, names: _Names, k: int, a: Arrival, site, launch_s: float, min_unit_s: float,
              sjf_rank: float | None, moves: dict[int, RowMatch] | None) -> None:
    """rrg: one row per unit element, on the classes :func:`.match.equivalents` names (their arches and
    accelerator types); with ``moves``, each row's match for the re-matching hook (:mod:`.simrematch`)."""
    g = build_graph(a.workflow)
    units, _ = decompose(g, min_unit_s)
    length = max((u.est + u.runtime_s for u in units), default=0.0)
    matches = match_units(units, site) if site is not None else {}
    placed: dict[str, list[int]] = {}
    for u in units:
        first = g.nodes[u.tasks[0]]["task"]
        amask, types = arch_mask(first.arch), None
        m = matches.get(u.name)
        if m is not None and m.chosen is not None:
            eq = equivalents(u, m)
            amask = arch_mask([o.cls.arch for o in eq])
            if first.accel and m.chosen.cls.accel_type:
                types = tuple(dict.fromkeys(o.cls.accel_type for o in eq))
        level = priority_level(u, length)
        score = -float(level) if sjf_rank is None else sjf_rank * 100.0 - level
        parents = [r for p in u.after for r in placed[p]]
        one = replace(u, width=1)
        out = []
        for e in range(u.width):
            idx = range(e * u.pack, min((e + 1) * u.pack, u.task_width))
            run = sum(float(a.durations[n][i]) for i in idx for n in u.tasks)
            row = rows.add(a.arrival, run + launch_s, u.limit_s + launch_s, u.nodes, u.cores, u.mem_gb,
                           names.gres_of(first, types), amask, names.wclass(u.wclass), parents, k, score)
            if moves is not None and m is not None and m.chosen is not None:
                moves[row] = RowMatch(one, m.chosen, (m.chosen, *m.alternatives))
            out.append(row)
        placed[u.name] = out


def _monolithic_rows(rows: _JobRows, names: _Names, k: int, a: Arrival, machine: Machine, launch_s: float,
                     score: float | None = None) -> None:
    wf = a.workflow
    shape = one_job_shape(wf, machine.groups)
    if shape is None:
        raise ValueError(f"workflow {wf.name}: no node group can run all its tasks in one job")
    gi, nodes = shape
    grp = machine.groups[gi]
    cores = nodes * grp.cores
    run = 0.0
    for _lvl, ts in sorted(by_level(wf).items()):
        longest = max(float(a.durations[t.name].max()) for t in ts)
        work = sum(float(a.durations[t.name].sum()) * t.cores * t.nodes for t in ts)
        run += max(longest, work / cores)
    limit = sum(t.limit_s for t in wf.tasks) + launch_s
    accel_tasks = [t for t in wf.tasks if t.accel]
    need_acc = max((t.accel[1].count for t in accel_tasks), default=0)
    gres = (-1, -1, 0)
    if need_acc:
        kind = accel_tasks[0].accel[0]
        if kind not in names.gres:
            names.gres.append(kind)
        gres = (names.gres.index(kind), -1, need_acc)
    rows.add(a.arrival, run + launch_s, limit, nodes, grp.cores, min(grp.memory_gb, max(t.mem_gb for t in wf.tasks))
             if grp.memory_gb else 0.0, gres, arch_mask([grp.arch]), -1, [], k, a.arrival if score is None else score)


def build_jobs(policy: str, arrivals: Sequence[Arrival], machine: Machine, site=None, launch_s: float = LAUNCH_S,
               min_unit_s: float = MIN_UNIT_S, rematch: DagRematch | None = None
               ) -> tuple[JobTable, list[list[int]], np.ndarray]:
    """The job table of ``arrivals`` under ``policy``, each job's dependencies (rows of the table) and the
    index of the workflow each row belongs to. The rank of every job is in ``qos_priority`` (lower first).
    ``rematch`` (rrg policies): filled with each job row's match, for the engine's re-matching hook."""
    if policy not in POLICIES:
        raise ValueError(f"unknown DAG policy '{policy}' (valid: {', '.join(POLICIES)})")
    classes = [w.name for w in site.policy.workload_classes] if site is not None else []
    names = _Names(classes)
    rows = _JobRows({k: [] for k in ("id", "submit", "run", "limit", "nodes", "cores", "mem_gb", "gres_name",
                                  "gres_type", "gres_count", "arch_mask", "wclass")}, [], [], [])
    work = [sum(float(a.durations[t.name].sum()) * t.cores * t.nodes for t in a.workflow.tasks) for a in arrivals]
    sjf = {k: float(r) for r, k in enumerate(np.argsort(work, kind="stable"))}
    moves: dict[int, RowMatch] | None = {} if rematch is not None else None
    for k, a in enumerate(arrivals):
        if policy == "monolithic":
            _monolithic_rows(rows, names, k, a, machine, launch_s)
        elif policy == "naive":
            _element_rows(rows, names, k, a, lambda _n, _t=a.arrival: _t, launch_s)
        elif policy == "critical-path":
            bl = schedule_times(build_graph(a.workflow)).blevel
            _element_rows(rows, names, k, a, lambda n, _b=bl: -_b[n], launch_s)
        elif choose_form(a.workflow, machine.groups, launch_s, min_unit_s).merged:
            _monolithic_rows(rows, names, k, a, machine, launch_s,
                             -float(MAX_LEVEL) if policy == "rrg" else sjf[k] * 100.0 - MAX_LEVEL)
        else:
            _rrg_rows(rows, names, k, a, site, launch_s, min_unit_s, sjf[k] if policy == "rrg-sjf" else None, moves)
    cols = dict(rows.cols, qos_priority=rows.score)
    if not any(g.memory_gb for g in machine.groups):  # a machine without memory (an SWF-like one): not modelled
        cols["mem_gb"] = [0.0] * len(rows.owner)
    table = JobTable.build(cols, gres_names=tuple(names.gres), gres_types=tuple(names.types),
                           class_names=tuple(names.classes))
    pos = np.empty(len(table), dtype=np.int64)
    pos[table.id - 1] = np.arange(len(table))  # original row -> sorted row
    order = table.id - 1
    after = [[int(pos[p]) for p in rows.after[int(o)]] for o in order]
    owner = np.asarray(rows.owner, dtype=np.int64)[order]
    if rematch is not None:
        rematch.rows = {int(pos[r]): m for r, m in moves.items()}
    return table, after, owner


def machine_for(site) -> Machine:
    """The site's machine, or the TPC-H default (:data:`TPCH_MACHINE`) without a site."""
    return machine_from_site(site) if site is not None else homogeneous(*TPCH_MACHINE, name="tpch-100")


def capacity(machine: Machine) -> tuple[float, float]:
    """(cores, accelerators) of the machine."""
    return float(machine.cores), float(sum(g.count * sum(g.gres.values()) for g in machine.groups))


def evaluate(policy: str, arrivals: Sequence[Arrival], site=None, launch_s: float = LAUNCH_S,
             min_unit_s: float = MIN_UNIT_S) -> dict:
    """Simulate ``arrivals`` under ``policy``: one result row (see the module docstring for the metrics)."""
    machine = machine_for(site)
    hook = DagRematch(machine) if site is not None and policy.startswith("rrg") else None
    jobs, after, owner = build_jobs(policy, arrivals, machine, site, launch_s, min_unit_s, hook)
    rank = ScoreRanking("dag-" + policy, lambda q: q.qos, static=True)
    speed = speed_matrix(site, machine, jobs) if site is not None else None
    engine = Engine(machine, jobs, rank, backfill=True, speed=speed, after=after,
                    packing=hook if hook is not None and hook.rows else None)
    out = engine.run()
    n = len(arrivals)
    done = np.full(n, -np.inf)
    np.maximum.at(done, owner, np.nan_to_num(out.end, nan=np.inf))
    arrival = np.array([a.arrival for a in arrivals])
    alone = np.array([_standalone(a, site) for a in arrivals])
    finished = np.isfinite(done)
    jct = (done - arrival)[finished]
    wait = (done - arrival - alone)[finished]
    return {"policy": policy, "workflows": int(finished.sum()), "unfinished": int(n - finished.sum()),
            "jobs": int(len(jobs)), "avg_jct_s": float(jct.mean()) if len(jct) else None,
            "avg_wait_s": float(wait.mean()) if len(wait) else None,
            "p95_jct_s": float(np.percentile(jct, 95)) if len(jct) else None,
            "max_jct_s": float(jct.max()) if len(jct) else None,
            "makespan_s": float(done[finished].max() - arrival.min()) if finished.any() else None,
            "sim_cpu_s": out.wall_s, "rematch_moves": hook.moves if hook is not None else 0}
