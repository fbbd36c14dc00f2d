"""Matching each unit to the node classes (partition x node group) that satisfy its constraints.

Solver: a greedy constraint-satisfaction pass, not the packing MILP, because the questions differ. Each unit's
*feasible* classes are a pure filter (arch, accelerator kind/type/count, the user's ``--constraint`` on the
group's features through the shared parser, cores and memory per node, node count, the partition's MaxTime,
the workload class's speed > 0). Choosing among them is one small decision per unit that depends on the graph
(slack), which the MILP does not see; and once submitted, the units are ordinary pending jobs that the
cycle's packing MILP already re-packs with the rest of the queue. So the pass is: units in order of slack
(critical first), then fewest alternatives; each takes the option expected to *finish* first (earliest
finish time, EFT), not simply the fastest one:

- expected start on a class: 0 if its free capacity now holds the whole unit; else when enough of the running
  jobs there end (``releases``: the snapshot's running jobs' end times, Slurm's limit); without that
  information, one run of the unit there (:func:`expected_start`);
- expected finish = expected start + run time / the class's speed factor for the unit's workload class;
- if critical (slack 0): the earliest expected finish (then cost);
- otherwise: the cheapest class (node-hour price x share of a node x hours) finishing within its slack of the
  earliest expected finish;

(CPU-only units go to accelerator nodes only when a CPU class has no room), and its demand is subtracted from
that pool's free capacity, so later units see what is left. A unit is sent to its choice *and* every other
node group the rule cannot tell from it but by when it frees (:func:`equivalents`: same run time, same kind
of node): Slurm starts it wherever room appears first, as it would a job that named no class. Every match keeps the other feasible classes in
order (``alternatives``): :func:`rematch` moves a unit that has not started when its class has no room and the
same rule, asked again with the capacity of now, ranks an alternative with room first. The simulator's ``rrg``
policy asks :func:`rematch_in` the same question every cycle (:mod:`.simrematch`). Planning cost is linear in
units x classes (x running jobs per class when releases are given).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..pack.classes import GroupState, accel_type, classes_from_site, per_node
from ..pack.model import NodeClass, Pool, Resources
from ..snapshot.constraint import parse_constraint
from .spec import parse_time
from .units import EPS, Unit


@dataclass(frozen=True)
class Option:
    """One feasible class for a unit: its estimated element run time there and the unit's node-hour cost."""

    cls: NodeClass
    time_s: float
    cost: float

    @property
    def features(self) -> str:
        return "&".join(self.cls.features)


@dataclass(frozen=True)
class Match:
    """Where a unit goes (``chosen``; None: no class can ever run it, ``reason`` says why) and the other
    feasible classes in order of preference."""

    unit: str
    chosen: Option | None
    alternatives: tuple[Option, ...]
    reason: str


def _max_time_s(text: str) -> float:
    return float("inf") if text in ("INFINITE", "UNLIMITED") else parse_time(text)


def _accel_ok(unit: Unit, group) -> bool:
    if unit.accel is None:
        return True
    kind, count, types = unit.accel
    if kind == "gpu":
        devs = [(group.gpu.type, group.gpu.count)] if group.gpu else []
    else:
        devs = [(a.type, a.count) for a in group.accelerators if a.kind == kind]
    return any(c >= count and (not types or t in types) for t, c in devs)


def feasible(unit: Unit, site, classes: Sequence[NodeClass]) -> tuple[list[NodeClass], str]:
    """The classes that can run ``unit`` at all, and (when none) what ruled the last candidates out."""
    groups = {g.name: g for g in site.node_groups}
    max_time = {p.name: _max_time_s(p.max_time) for p in site.partitions}
    known = {w.name for w in site.policy.workload_classes}
    cons = parse_constraint(unit.constraint) if unit.constraint else None
    why: tuple[int, str] = (-1, "no node class in the site")  # the check the best candidate failed last
    out = []
    for c in classes:
        g = groups[c.pool]
        node = per_node(g)
        failed = None
        if unit.arch and g.cpu.arch not in unit.arch:
            failed = (0, f"no node of arch {'|'.join(unit.arch)}")
        elif not _accel_ok(unit, g):
            kind, count, types = unit.accel
            failed = (1, f"no node with {count} {kind}(s) of type {'|'.join(types) or 'any'}")
        elif cons is not None and not cons.matches(g.all_features):
            failed = (2, f"no node whose features satisfy --constraint={unit.constraint}")
        elif unit.cores > node.cpus or unit.mem_gb > node.mem_gb or unit.nodes > g.count:
            failed = (3, f"no node group with {unit.nodes} node(s) of {unit.cores} cores and {unit.mem_gb:g} GB "
                         "among those that pass the other checks")
        elif unit.limit_s > max_time[c.partition]:
            failed = (4, f"time limit {unit.limit_s:.0f} s exceeds MaxTime of partition {c.partition}")
        elif unit.wclass and unit.wclass in known and c.speed_for(unit.wclass) <= 0:
            failed = (5, f"workload class {unit.wclass} may not run on {c.pool}")
        if failed is None:
            out.append(c)
        elif failed[0] > why[0]:
            why = failed
    return out, why[1]


def _demand(unit: Unit) -> Resources:
    acc = unit.accel[1] if unit.accel else 0
    n = unit.width * unit.nodes
    return Resources(unit.cores * n, unit.mem_gb * n, acc * n)


def _fits(free: Resources, need: Resources) -> bool:
    return free.cpus >= need.cpus and free.mem_gb >= need.mem_gb and free.accels >= need.accels


def _options(unit: Unit, cands: list[NodeClass], pools: Mapping[str, Pool]) -> list[Option]:
    out = []
    for c in cands:
        speed = c.speed_for(unit.wclass) if unit.wclass else 1.0
        p = pools[c.pool]
        time_s = unit.runtime_s / max(speed, 1e-9)
        share = max(unit.cores / max(p.per_node.cpus, 1), unit.mem_gb / max(p.per_node.mem_gb, 1e-9),
                    (unit.accel[1] / max(p.per_node.accels, 1)) if unit.accel else 0.0)
        out.append(Option(c, time_s, p.cost_per_hour * share * unit.nodes * unit.width * time_s / 3600.0))
    return out


Releases = Mapping[str, Sequence[tuple[float, Resources]]]  # pool -> (seconds from now, what a running job frees)


def expected_start(free: Resources, need: Resources, time_s: float,
                   releases: Sequence[tuple[float, Resources]] = ()) -> float:
    """Seconds until ``need`` fits a class with ``free`` capacity now: 0 if it fits; else the first of the
    ``releases`` (ends of the running jobs there) after which it fits; without enough of them, ``time_s`` (one
    run of the unit there: the class is busy with work of its kind)."""
    if _fits(free, need):
        return 0.0
    c, m, a = free.cpus, free.mem_gb, free.accels
    for at, r in sorted(releases, key=lambda x: x[0]):
        c, m, a = c + r.cpus, m + r.mem_gb, a + r.accels
        if _fits(Resources(c, m, a), need):
            return max(at, 0.0)
    return time_s


def _order(unit: Unit, opts: Sequence[Option], free: Mapping[str, Resources], releases: Releases | None = None
           ) -> list[Option]:
    """Options most preferred first (see the module docstring): earliest expected finish, within slack the
    cheapest."""
    need = _demand(unit)
    rel = releases or {}
    finish = {o.cls.name: expected_start(free[o.cls.pool], need, o.time_s, rel.get(o.cls.pool, ())) + o.time_s
              for o in opts}
    best = min(finish.values())
    cpu_room = unit.accel is None and any(o.cls.accel_type is None and _fits(free[o.cls.pool], need) for o in opts)

    def key(o: Option) -> tuple:
        idle_accel = cpu_room and o.cls.accel_type is not None  # CPU work on an accelerator node
        eft = finish[o.cls.name]
        if unit.critical:
            return (idle_accel, eft, o.cost, o.cls.name)
        return (idle_accel, eft - best > unit.slack + EPS, o.cost, eft, o.cls.name)
    return sorted(opts, key=key)


def match_units(units: Sequence[Unit], site, state: Mapping[str, GroupState] | None = None,
                releases: Releases | None = None, pool: str | None = None) -> dict[str, Match]:
    """Match every unit (see the module docstring); ``state`` is each group's free capacity now (default: all
    idle), ``releases`` the running jobs' expected ends per group, ``pool`` a node group every unit must use
    (the merged form's). Deterministic for the same input."""
    pools, classes = classes_from_site(site, state)
    classes = [c for c in classes if pool is None or c.pool == pool]
    by_pool = {p.name: p for p in pools}
    free = {p.name: p.free_now for p in pools}
    feas = {u.name: feasible(u, site, classes) for u in units}
    out: dict[str, Match] = {}
    for u in sorted(units, key=lambda u: (u.slack, len(feas[u.name][0]), u.est, u.name)):
        cands, why = feas[u.name]
        if not cands:
            out[u.name] = Match(u.name, None, (), f"cannot run anywhere: {why}")
            continue
        ranked = _order(u, _options(u, cands, by_pool), free, releases)
        best = ranked[0]
        need = _demand(u)
        f = free[best.cls.pool]
        room = _fits(f, need)
        free[best.cls.pool] = Resources(max(f.cpus - need.cpus, 0), max(f.mem_gb - need.mem_gb, 0),
                                        max(f.accels - need.accels, 0))
        rule = "earliest finish" if u.critical else f"cheapest finishing within slack {u.slack:.0f} s"
        out[u.name] = Match(u.name, best, tuple(ranked[1:]),
                            f"{'critical' if u.critical else 'slack'}: {rule}; {best.cls.name} "
                            f"({best.time_s:.0f} s/element, {'room now' if room else 'no room now'}, "
                            f"{len(ranked) - 1} alternative(s))")
    return out


def equivalents(unit: Unit, match: Match, rel: float = 0.01) -> tuple[Option, ...]:
    """Where the unit is sent at once (late binding): the chosen option and, one per node group, every
    alternative the rule cannot tell from it but by when it frees (the same run time within ``rel``, on the
    same kind of node: accelerator or not); Slurm then starts it on whichever frees first. A unit with its own
    ``--constraint`` keeps the chosen option only."""
    c = match.chosen
    if c is None:
        return ()
    out = {c.cls.pool: c}
    for o in match.alternatives if not unit.constraint else ():
        if ((o.cls.accel_type is None) == (c.cls.accel_type is None) and abs(o.time_s - c.time_s) <= rel * c.time_s
                and o.cls.pool not in out):
            out[o.cls.pool] = o
    return tuple(out.values())


def request(options: Sequence[Option]) -> tuple[str, str]:
    """(``--partition``, ``--constraint``) that send a job to any of ``options``: the partitions as a list, the
    classes' features as an OR of groups when there are several."""
    parts = ",".join(dict.fromkeys(o.cls.partition for o in options))
    if len(options) == 1:
        return parts, options[0].features
    return parts, "|".join(f"({o.features})" for o in options)


def rematch(unit: Unit, match: Match, site, state: Mapping[str, GroupState], releases: Releases | None = None
            ) -> Option | None:
    """For a unit that has not started: :func:`rematch_in` with the free capacity of ``state``. Pure; the
    caller turns it into a ``MoveJob``."""
    if match.chosen is None:
        return None
    pools, _ = classes_from_site(site, state)
    return rematch_in(unit, match.chosen, match.alternatives, {p.name: p.free_now for p in pools}, releases)


def rematch_in(unit: Unit, current: Option, alternatives: Sequence[Option], free: Mapping[str, Resources],
               releases: Releases | None = None) -> Option | None:
    """Where a unit not started should move (None: stay): nowhere while ``current``'s class has room for it;
    else the option the matching rule ranks first now (earliest expected finish), if that is another class
    with room now (when the rule still ranks ``current`` first, waiting for it is expected to finish sooner)."""
    need = _demand(unit)
    if _fits(free[current.cls.pool], need):
        return None
    top = _order(unit, [current, *alternatives], free, releases)[0]
    if top.cls.pool == current.cls.pool or not _fits(free[top.cls.pool], need):
        return None
    return top


__all__ = ["Match", "Option", "accel_type", "equivalents", "feasible", "expected_start", "match_units", "rematch",
           "rematch_in", "request"]
