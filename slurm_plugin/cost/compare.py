"""Static partitions vs Slurm with the suite's config vs the whole suite, on one workload (issue 18 item 1).

Scenarios (every arm: EASY backfill, the site's speed factors, the same jobs):

* ``static``: each job runs only where its user pinned it, no power management. A job that allows several
  architectures or accelerator types is pinned to one of them, chosen by its user (user id, else job id,
  modulo the options: each user always uses one partition, as on a statically partitioned cluster).
  Multifactor ranking, every node always on.
* ``slurm``: the suite's generated config only: jobs keep their alternatives (arch OR-constraints, untyped
  GRES) and Slurm places them (lowest Weight = cheapest group first); multifactor; the site's SuspendTime
  (``slurm.suspend_time``; -1 = always on).
* ``suite``: admission routing at arrival (the daemon's :func:`~slurm_plugin.admission.admit` on a snapshot of
  the simulated cluster), the packing MILP every 60 s, the learned ranking (DQN), the break-even power
  planner. Calendars: not in these rows (see :mod:`.offpeak`).
* ``suite-no-X``: the suite without one part (the ablations): X in admission, packing, ranking (multifactor
  instead of the DQN), power (always on).

Each row: ``{scenario, policy, utilization, utilization_powered, avg_wait_s, p95_wait_s, energy_kwh, cost}``
plus utilization per node group (of all cores and of powered cores) and the CPU seconds the run took.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from ..site import ARCHES
from ..workload.jobs import ARCH_BIT, JobTable

SCENARIOS = ("static", "slurm", "suite", "suite-no-admission", "suite-no-packing", "suite-no-ranking",
             "suite-no-power")
# heterogeneity-aware placement (item 2): FCFS + EASY, always on, Gavel's FIFO baseline; routers at arrival
HET_SCENARIOS = ("het-unaware", "het-packing", "het-aware", "het-aware-cost", "het-route", "het-route-cost",
                 "het-suite")


@dataclass(frozen=True)
class Arm:
    """One scenario's switches."""

    scenario: str
    pin: bool = False
    routers: tuple[str, ...] = ()  # at arrival, in order: admission | throughput | throughput-per-cost
    packing: bool = False
    ranking: str = "multifactor"
    power: str = "always-on"  # always-on | site (Slurm's SuspendTime) | planner

    @property
    def policy(self) -> str:
        parts = ["pinned" if self.pin else "alternatives", self.ranking + "+easy", f"power={self.power}"]
        parts += list(self.routers) + ["packing"] * self.packing
        return ",".join(parts)


def arms(learned: str = "dqn") -> dict[str, Arm]:
    """Every scenario by name; ``learned`` is the suite's ranking (the shipped DQN by default)."""
    suite = Arm("suite", routers=("admission",), packing=True, ranking=learned, power="planner")
    het = Arm("het-unaware", ranking="fcfs")
    return {
        "static": Arm("static", pin=True),
        "slurm": Arm("slurm", power="site"),
        "suite": suite,
        "suite-no-admission": replace(suite, scenario="suite-no-admission", routers=()),
        "suite-no-packing": replace(suite, scenario="suite-no-packing", packing=False),
        "suite-no-ranking": replace(suite, scenario="suite-no-ranking", ranking="multifactor"),
        "suite-no-power": replace(suite, scenario="suite-no-power", power="always-on"),
        "het-unaware": het,
        "het-packing": replace(het, scenario="het-packing", packing=True),
        "het-aware": replace(het, scenario="het-aware", routers=("throughput",), packing=True),
        "het-aware-cost": replace(het, scenario="het-aware-cost", routers=("throughput-per-cost",), packing=True),
        "het-route": replace(het, scenario="het-route", routers=("throughput",)),
        "het-route-cost": replace(het, scenario="het-route-cost", routers=("throughput-per-cost",)),
        "het-suite": replace(suite, scenario="het-suite", routers=("admission", "throughput")),
    }


def pin_jobs(jobs: JobTable, machine) -> JobTable:
    """``jobs`` with every choice taken away: an arch OR becomes one arch, an untyped (or ``a|b``) GRES one
    type, each picked by the job's user (user id, or the job id when the trace has no users) modulo its options.
    Jobs that already have one option are unchanged."""
    key = np.where(jobs.user >= 0, jobs.user, jobs.id)
    mask = jobs.arch_mask.copy()
    present = {g.arch for g in machine.groups}
    for i in np.flatnonzero(mask):
        archs = [a for a in ARCHES if int(mask[i]) & ARCH_BIT[a] and a in present]
        if len(archs) > 1:
            mask[i] = ARCH_BIT[archs[int(key[i]) % len(archs)]]
    types = list(jobs.gres_types)
    gtype = jobs.gres_type.copy()
    for i in np.flatnonzero(jobs.gres_name >= 0):
        name = jobs.gres_names[jobs.gres_name[i]]
        allowed = jobs.gres_type_options(int(i))
        options = sorted({t for g in machine.groups for (n, t) in g.gres
                          if n == name and t and (allowed is None or t in allowed)
                          and (not mask[i] or int(mask[i]) & ARCH_BIT[g.arch])})
        if len(options) > 1 or (allowed is not None and len(allowed) > 1 and options):
            pick = options[int(key[i]) % len(options)]
            if pick not in types:
                types.append(pick)
            gtype[i] = types.index(pick)
    return replace(jobs, arch_mask=mask, gres_type=gtype, gres_types=tuple(types))


def run_arm(p, arm: Arm, observer=None) -> tuple[dict, dict]:
    """One scenario on a prepared workload (:func:`slurm_plugin.sim.run.prepare`, with a site): (row, timeline).
    ``observer(engine, t)`` (tests) sees the engine after every event time."""
    row, timeline, _ = simulate_arm(p, arm, observer)
    return row, timeline


def simulate_arm(p, arm: Arm, observer=None):
    """As :func:`run_arm`, also returning the engine that ran (its ``job_nodes``, ``begin``/``end``)."""
    from ..policy import ScalingSpec
    from ..sim.hooks import AlwaysOn, IdleSuspend, packing, ranking
    from ..sim.metrics import compute_metrics
    from ..sim.packing import speed_matrix
    from ..sim.policy import sim_scaling
    from .compare_admission import AdmissionRouting
    from .compare_engine import ChainedRouting, CostEngine
    from .throughput import ThroughputRouting

    site, machine = p.site, p.machine
    if site is None:
        raise ValueError("cost compare needs a site (--site): partitions, speed factors and prices come from it")
    jobs = pin_jobs(p.workload.jobs, machine) if arm.pin else p.workload.jobs
    cpu0, t0 = time.process_time(), time.perf_counter()
    if arm.power == "planner":
        scale = sim_scaling(ScalingSpec(), machine, jobs)
    elif arm.power == "site" and site.slurm.suspend_time and site.slurm.suspend_time > 0:
        scale = IdleSuspend(float(site.slurm.suspend_time))
    else:
        scale = AlwaysOn()
    pack = packing("milp", site, machine, jobs) if arm.packing else None
    speed = speed_matrix(site, machine, jobs)
    make = {"admission": lambda: AdmissionRouting(site, jobs),
            "throughput": lambda: ThroughputRouting(machine, jobs, speed),
            "throughput-per-cost": lambda: ThroughputRouting(machine, jobs, speed, per_cost=True)}
    routers = {name: make[name]() for name in arm.routers}
    engine = CostEngine(machine, jobs, ranking(arm.ranking, site, float(machine.cores)), backfill=True,
                        scaling=scale, packing=pack, speed=speed, observer=observer,
                        admission=ChainedRouting(tuple(routers.values())) if routers else None)
    out = engine.run()
    m = compute_metrics(jobs, out, machine)
    on = engine.meter.on_core_s
    busy = out.group_core_s
    names = [g.name for g in machine.groups]
    row = {
        "scenario": arm.scenario, "policy": arm.policy, "utilization": m["utilization"],
        "utilization_powered": float(busy.sum() / max(on.sum(), 1e-9)),
        "avg_wait_s": m["avg_wait_s"], "p95_wait_s": m["p95_wait_s"], "energy_kwh": float(m["energy_kwh"]),
        "cost": float(m["cost"]), "avg_bsld": m["avg_bsld"], "max_wait_s": m["max_wait_s"], "makespan_s": m["makespan_s"],
        "utilization_by_group": m["utilization_by_group"],
        "utilization_powered_by_group": {n: float(busy[i] / on[i]) if on[i] > 0 else None for i, n in enumerate(names)},
        "jobs": len(jobs), "unstarted": int(np.isnan(out.begin).sum()), "speed_timeouts": engine.speed_timeouts,
        "moves": pack.stats.moves if pack is not None else 0,
        "routers": {name: dict(r.stats) for name, r in routers.items()},
        "avg_jct_s": float(np.nanmean(out.end - jobs.submit)),
        **device_utilization(jobs, out, engine, machine, m["makespan_s"]),
        "cpu_s": time.process_time() - cpu0, "wall_s": time.perf_counter() - t0,
    }
    return row, out.timeline, engine


def device_utilization(jobs: JobTable, out, engine, machine, span: float) -> dict:
    """Busy device-seconds (GPUs, NPUs: every GRES count a node group has) over those that exist during
    ``span`` and over those powered (a node's devices count while the node is on), overall and per group that
    has devices; None values when the machine has no devices. A job's devices count from its start to its end
    on each node it ran on."""
    per_node = np.array([sum(g.gres.values()) for g in machine.groups], dtype=float)
    if not per_node.any():
        return {"utilization_devices": None, "utilization_devices_powered": None,
                "utilization_devices_by_group": {}}
    busy = np.zeros(len(machine.groups))
    group = engine.cluster.group
    for j, nodes in engine.job_nodes.items():
        dur = float(out.end[j] - out.begin[j])
        if dur > 0:
            np.add.at(busy, group[nodes], dur * float(jobs.gres_count[j]))
    have = np.array([g.count for g in machine.groups]) * per_node * max(span, 1e-9)
    cores = np.array([g.cores for g in machine.groups], dtype=float)
    on = engine.meter.on_core_s / cores * per_node
    dev = per_node > 0
    return {"utilization_devices": float(busy[dev].sum() / have[dev].sum()),
            "utilization_devices_powered": float(busy[dev].sum() / max(on[dev].sum(), 1e-9)),
            "utilization_devices_by_group": {g.name: float(busy[i] / have[i])
                                             for i, g in enumerate(machine.groups) if dev[i]}}


def _one(p, arm: Arm) -> tuple[dict, dict]:
    return run_arm(p, arm)


def compare_scenarios(p, names: tuple[str, ...] = SCENARIOS, learned: str = "dqn", jobs: int | None = 1,
                      on_row=None) -> list[dict]:
    """The named scenarios on ``p`` (on ``jobs`` processes); rows in the order of ``names``."""
    from ..sim.parallel import run_all

    table = arms(learned)
    bad = [n for n in names if n not in table]
    if bad:
        raise ValueError(f"unknown scenario '{bad[0]}' (valid: {', '.join(table)})")
    results = run_all(_one, p, [table[n] for n in names], jobs, desc=p.workload.name,
                      on_result=(lambda i, res: on_row(res[0])) if on_row else None)
    return [row for row, _ in results]


def headline(rows: list[dict]) -> dict:
    """Static vs suite against the mission's anchors (40 % -> 65 % utilization, -37 % wait): the figures and
    whether each holds. Utilization counts every core (``utilization``) and only powered ones
    (``utilization_powered``); the anchor is checked on the latter, the one power management can move."""
    by = {r["scenario"]: r for r in rows}
    if "static" not in by or "suite" not in by:
        return {}
    s, u = by["static"], by["suite"]
    wait = None if not s["avg_wait_s"] else u["avg_wait_s"] / s["avg_wait_s"] - 1
    gain = 100 * (u["utilization_powered"] - s["utilization_powered"])
    return {"static_utilization": s["utilization_powered"], "suite_utilization": u["utilization_powered"],
            "utilization_gain_points": gain, "wait_change": wait,
            "cost_change": u["cost"] / s["cost"] - 1 if s["cost"] else None,
            "energy_change": u["energy_kwh"] / s["energy_kwh"] - 1 if s["energy_kwh"] else None,
            **_device_gain(s, u),
            "anchor_utilization_gain_points": 25.0, "anchor_wait_change": -0.37,
            "utilization_anchor_holds": gain >= 25.0, "wait_anchor_holds": wait is not None and wait <= -0.37}


def _device_gain(static: dict, suite: dict) -> dict:
    """Static -> suite utilization of devices (all, powered), where both rows have device figures."""
    if static.get("utilization_devices") is None or suite.get("utilization_devices") is None:
        return {}
    return {"static_utilization_devices": static["utilization_devices_powered"],
            "suite_utilization_devices": suite["utilization_devices_powered"],
            "device_utilization_gain_points": 100 * (suite["utilization_devices_powered"]
                                                     - static["utilization_devices_powered"]),
            "device_utilization_gain_points_all": 100 * (suite["utilization_devices"]
                                                         - static["utilization_devices"])}


def table(rows: list[dict]) -> str:
    """Markdown: one line per scenario (with device utilization columns when the rows have them)."""
    devices = any(r.get("utilization_devices") is not None for r in rows)
    cols = ["scenario", "util (all cores)", "util (powered)"]
    cols += ["util devices (all)", "util devices (powered)"] * devices
    cols += ["avg wait s", "p95 wait s", "energy kWh", "cost", "moves", "CPU s"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [r["scenario"], f"{r['utilization']:.3f}", f"{r['utilization_powered']:.3f}"]
        if devices:
            cells += [f"{r['utilization_devices']:.3f}", f"{r['utilization_devices_powered']:.3f}"]
        cells += [f"{r['avg_wait_s']:.0f}", f"{r['p95_wait_s']:.0f}", f"{r['energy_kwh']:.1f}", f"{r['cost']:.0f}",
                  str(r["moves"]), f"{r['cpu_s']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: list[dict], path, title: str = "") -> None:
    """Bars per scenario: utilization (all cores, powered), average and p95 wait, energy, cost."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["scenario"] for r in rows]
    x = np.arange(len(rows))
    fig, axes = plt.subplots(1, 4, figsize=(18, 4.5))
    ax = axes[0]
    devices = any(r.get("utilization_devices") is not None for r in rows)
    bars = [("utilization", "all cores"), ("utilization_powered", "powered cores")]
    bars += [("utilization_devices", "all devices"), ("utilization_devices_powered", "powered devices")] * devices
    width = 0.8 / len(bars)
    for k, (key, label) in enumerate(bars):
        ax.bar(x + (k - (len(bars) - 1) / 2) * width, [r[key] for r in rows], width, label=label)
    ax.set_title("utilization")
    ax.legend()
    ax = axes[1]
    ax.bar(x - 0.2, [r["avg_wait_s"] for r in rows], 0.4, label="average")
    ax.bar(x + 0.2, [r["p95_wait_s"] for r in rows], 0.4, label="p95")
    ax.set_title("wait (s)")
    ax.legend()
    axes[2].bar(x, [r["energy_kwh"] for r in rows])
    axes[2].set_title("energy (kWh)")
    axes[3].bar(x, [r["cost"] for r in rows])
    axes[3].set_title("cost (node-hours x price)")
    for ax in axes:
        ax.set_xticks(x, names, rotation=40, ha="right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
