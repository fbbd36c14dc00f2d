"""Re-simulate a recorded heterogeneous replay (:mod:`slurm_plugin.sim.fidelity_record`) and compare.

The simulator gets what Slurm saw: each job's submit time (the client's clock kept within Slurm's second),
its request as slurmctld held it after admission (nodes, cores, memory, GRES, the arch/type features), its
time limit, its recorded run (end - start) and its SiteFactor; backfill runs at the recorded cycles; the
machine is the replay site's (:func:`~slurm_plugin.sim.fidelity_workload.replay_site_data`); the Slurm timing
switched on is a :class:`~slurm_plugin.sim.slurm_timing.SlurmTiming`.

Energy on both sides uses the site's power model (a powered node draws idle_w + (busy_w - idle_w) x busy
core fraction, booting/powering down idle_w, off off_w): the real side on the recorded node power timeline
and the jobs' recorded nodes and times, the simulator on its own; each from the first submit to its last end.
On both sides a job's cores count as busy only while it runs, from its start for its recorded run
(:class:`WorkEnergy`), not while the simulator holds them allocated around that: waiting for its other nodes
to boot (slurmctld keeps the job CONFIGURING and resets its StartTime when they are up) or for ``release_s``
after its end.
"""

from __future__ import annotations

import math
import re

import numpy as np
from scipy.stats import kendalltau

from ..site import ARCHES, Site
from ..workload.jobs import JobTable, arch_mask
from .engine import Engine
from .hooks import ranking
from .machine import machine_from_site
from .power import BOOTING, OFF, STATE_NAMES
from .slurm_backfill import SlurmBackfillEngine
from .slurm_timing import (BATCH_SCHED_DELAY_S, PERIODIC_TIMEOUT_S, POWER_SAVE_INTERVAL_S, SlurmTiming,
                           batch_passes, check_clock, config_clock,
                           effective_runs, initial_idle_since, scaling_for, timed_machine, with_calc_period,
                           with_site_factor)
from .fidelity_workload import PARTITION

RAN = {"COMPLETED", "TIMEOUT"}
POWER_SCAN = True  # replay_timing's power_scan default (slurmctld's power scans; fidelity/HISTORY.md, session 12)
FACTOR_AT_SUBMIT = True  # replay_timing's factor_at_submit default (the first SiteFactor seen counts from submit)
PRIORITY_CALC = True  # replay_timing's priority_calc default (ages set at slurmctld's priority recalculations)
PRIORITY_CALC_PERIOD_S = 300.0  # PriorityCalcPeriod default, 5 minutes (man slurm.conf 22.05.8 and 24.11.5)
POWER_START = True  # replay_timing's power_start default (the nodes' recorded power states at the first submit)
BF_SEES_SUBMIT = False  # replay_timing's bf_sees_submit default (a backfill cycle sees a job from its submit)
WILL_RUN = False  # replay_timing's will_run default (backfill plans at the select plugin's start estimate)
BF_DEPTH = False  # replay_timing's bf_depth default (a cycle Slurm cut short tests as many jobs as it did)
# replay_timing's kill_at_check and bf_sees_end defaults (a killed job ends at the time-limit check; a backfill
# cycle takes the nodes of ended runs): on since session 25, by a rule written before they were scored; over
# the committed records 300-job mean tau 0.872 -> 0.879, 1,000-job 0.861 -> 0.871 (results/sim/fidelity/kill-check-s25/)
KILL_AT_CHECK = True
BF_SEES_END = True
BF_YIELD_INTERVAL_S = 2.0  # SchedulerParameters bf_yield_interval default (man slurm.conf 22.05.8 and 24.11.5)
KILL_WAIT_S = 30.0  # KillWait default (man slurm.conf 22.05.8 and 24.11.5)
# backfill reservations a cycle holds at most: slurmctld's node_space table has bf_node_space_size records
# (default bf_max_job_test, 500; man slurm.conf 22.05.8 and 24.11.5) and a job's reservation takes at most two.
# 100 before session 23; 250 raised the 1,000-job records' tau 0.873 -> 0.887 (mean) and left the 300-job ones
# as they were (results/sim/fidelity/will-run-s23/README.md).
BF_RESERVATIONS = 250
BF_RESOLUTION_S = 60.0  # Slurm's bf_resolution default (the replay cluster sets no SchedulerParameters)
_GRES = re.compile(r"(?:gres[:/])?(?P<name>[a-z]+)(?::(?P<type>[A-Za-z0-9_.-]+))?:(?P<count>\d+)")


def ran_jobs(record: dict) -> list[dict]:
    """The recorded jobs that ran to an end Slurm chose (COMPLETED, or TIMEOUT at the limit)."""
    return [j for j in record.get("jobs", []) if j.get("state") in RAN and j.get("start") and j.get("end")]


def _features(features: str, gres_types: set[str]) -> tuple[list[str], list[str]]:
    tokens = [t for t in re.split(r"[|&,()\[\]*\s]+", features or "") if t and t != "(null)"]
    return [t for t in tokens if t in ARCHES], [t for t in tokens if t in gres_types]


def site_factor_at_start(seen: list, start: float, at_submit: bool = False) -> list[float]:
    """The SiteFactor values of a job in effect by its ``start`` (epoch seconds), from the recorder's
    (first-seen time, value) pairs: those seen by then; with ``at_submit`` the first value seen counts from the
    job's submit even when the recorder first polled the job after its start (start is truncated to whole
    seconds, the poll came up to a few seconds later): the suite's job_submit shim sets the band at submit, as
    slurmctld's log shows (seed 41: job 1219 ``InitPrio=4120005`` at submit, its SiteFactor 4,120,000 first
    polled 0.3 s after its recorded start; the replay gave it none and started it 785 s late)."""
    factors = [v for when, v in seen if when <= start]
    return factors or ([v for _, v in seen[:1]] if at_submit else [])


def replay_table(site: Site, jobs: list[dict], t0: float, timing: SlurmTiming) -> JobTable:
    """The job table of the recorded ``jobs`` (times relative to ``t0``)."""
    site_types = {t for g in site.node_groups for _, t, _ in g.gres}
    names, types = [], []
    rows: dict[str, list] = {k: [] for k in ("id", "submit", "run", "limit", "nodes", "cores", "mem_gb",
                                             "arch_mask", "gres_name", "gres_type", "gres_count", "qos_priority")}
    for j in jobs:
        spec = j["spec"]
        archs, typed = _features(j.get("features", ""), site_types)
        gname, gtype, gcount = -1, -1, 0
        if spec.get("gres"):
            m = _GRES.fullmatch(spec["gres"])
            if m is None:
                raise ValueError(f"job {j['id']}: GRES {spec['gres']!r} is not name[:type]:count")
            gtype_s = m["type"] or ("|".join(sorted(typed)) if typed else None)
            names += [m["name"]] if m["name"] not in names else []
            gname, gcount = names.index(m["name"]), int(m["count"])
            if gtype_s:
                types += [gtype_s] if gtype_s not in types else []
                gtype = types.index(gtype_s)
        factors = site_factor_at_start(j.get("site_factor", []), j["start"], timing.site_factor_submit)
        rows["id"].append(j["id"])
        rows["submit"].append(min(max(j["submit_wall"], j["submit"]), j["submit"] + 0.999) - t0
                              + (0.0 if timing.bf_sees_submit else timing.submit_s))
        rows["run"].append(j["end"] - j["start"])
        rows["limit"].append(spec["limit_min"] * 60.0)
        rows["nodes"].append(spec["nodes"])
        rows["cores"].append(spec["cores"])
        rows["mem_gb"].append(float(spec["cores"]))
        rows["arch_mask"].append(arch_mask(archs))
        rows["gres_name"].append(gname)
        rows["gres_type"].append(gtype)
        rows["gres_count"].append(gcount)
        rows["qos_priority"].append(float(factors[-1]) if factors and timing.site_factor else 0.0)
    return JobTable.build(rows, gres_names=tuple(names), gres_types=tuple(types))


class PowerUpCounter:
    """Engine observer: counts nodes that enter BOOTING (power-ups), also those that powered off and were
    booted again within one event (a node shutting down that a waiting job takes as soon as it is off). With
    ``trace`` it also logs, as (time, node, what), each node's power state changes (what: the new state's
    name) and the times its last job left it (what: "idle")."""

    def __init__(self, trace: bool = False):
        self.count, self._last, self._busy = 0, None, None
        self.log: list[tuple[float, int, str]] | None = [] if trace else None

    def __call__(self, engine: Engine, t: float) -> None:
        state = engine.cluster.state
        if self._last is not None:
            self.count += int(((self._last != BOOTING) & (state == BOOTING)).sum())
        if self.log is not None:
            busy = engine.cluster.njobs > 0
            if self._last is not None:
                self.log += [(t, int(i), STATE_NAMES[state[i]]) for i in np.flatnonzero(self._last != state)]
                self.log += [(t, int(i), "idle") for i in np.flatnonzero(self._busy & ~busy)]
            self._busy = busy
        self._last = state.copy()


class WorkEnergy:
    """Engine observer: the replay's energy counted as :func:`real_power` counts the real run's. Every node draws
    idle_w while powered (on, booting, powering down) and off_w when off, from the engine's power states; a job
    adds (busy_w - idle_w) x its share of each of its nodes' cores only while it works: from its begin for its
    recorded run (``work``), the nodes being on then. The engine's own meter counts a job's cores busy from its
    allocation to its end + ``release_s``, so it also counted as work

    - the wait of a job placed on some nodes that are up and some that must boot: slurmctld keeps it CONFIGURING
      and launches nothing until all are up, then resets its StartTime (22.05's log: ``job_time_limit:
      Configuration for JobId=40 complete``, ``Resetting JobId=40 start time for node power up``; its recorded
      start, and the real side's busy time, begin there), while the engine held the powered node's cores busy
      for the 25-30 s of boot and time-limit check;
    - ``release_s`` after each job's end: the job is done (its recorded EndTime), the node takes new work only
      that much later, drawing idle_w meanwhile (1 s: +1.4 % of the energy of the 300-job records)."""

    def __init__(self):
        self.t: list[float] = []
        self.base_w: list[float] = []
        self.nodes: dict[int, tuple[int, np.ndarray]] = {}  # job row -> (cores per node, node indices)

    def __call__(self, engine: Engine, t: float) -> None:
        meter, state = engine.meter, engine.cluster.state
        self.t.append(t)
        self.base_w.append(float(np.where(state == OFF, meter.off_w, meter.idle_w).sum()))
        for j in engine.running.keys() - self.nodes.keys():
            r, nodes, _ = engine.running[j]
            self.nodes[j] = (r.cores, np.array(nodes))

    def joules(self, engine: Engine, begin: np.ndarray, work: np.ndarray, end: float) -> float:
        """Joules from simulated 0 to ``end`` of the run, jobs working from ``begin`` for ``work`` (per row)."""
        t = np.append(np.asarray(self.t), end)
        base = float(np.sum(np.asarray(self.base_w) * np.diff(np.clip(t, 0.0, end))))
        dyn = 0.0
        for j, (cores, nodes) in self.nodes.items():
            span = min(begin[j] + work[j], end) - max(begin[j], 0.0)
            if span > 0:
                dyn += cores * float(engine.meter.dyn_w[nodes].sum()) * span
        return base + dyn


def simulate_record(site: Site, record: dict, timing: SlurmTiming, trace: bool = False) -> dict:
    """Simulate the recorded replay; returns {"id": [...], "start": [...], "end": [...]} (seconds after the
    first submit, starts truncated to seconds as Slurm records them), "power_ups" and "energy_j" (from the
    first submit to the last end, :class:`WorkEnergy`; "energy_meter_j" the engine's own meter to the last end
    + ``release_s``, as counted before); with ``trace`` also "power_log" (:class:`PowerUpCounter`'s log)."""
    jobs = ran_jobs(record)
    t0 = min(j["submit"] for j in jobs)
    table = replay_table(site, jobs, t0, timing)
    machine = timed_machine(machine_from_site(site, PARTITION), timing)
    total = float(sum(g.count * g.cores for g in machine.groups))
    rank = with_calc_period(with_site_factor(ranking("multifactor", site, total), timing), timing, t0)
    scaling = scaling_for(timing, t0)
    counter, work_energy = PowerUpCounter(trace), WorkEnergy()

    def observer(engine: Engine, t: float) -> None:
        counter(engine, t)
        work_energy(engine, t)

    bf_times = [c - t0 for c in record.get("bf_cycles", [])] or None
    depths = cut_short_cycles(record, t0) if timing.bf_depth else {}
    # without power saving the engine takes the reservations at construction: at least 100 (the replays' count
    # before session 23, also for a timing that models none)
    kw = dict(backfill=True, bf_interval_s=30.0, bf_times=bf_times,
              reservations=1 if scaling else max(timing.reservations, 100),
              scaling=scaling, observer=observer)
    if timing.bf_resolution_s is None:
        engine = Engine(machine, table, rank, **kw)
    else:
        passes = None
        if timing.batch_sched_delay_s is not None:
            passes = batch_passes(table.submit, t0, timing.sched_start, timing.batch_sched_delay_s)
        ups = cycle_power_ups(record, site, t0) if timing.cycle_power else []
        engine = SlurmBackfillEngine(machine, table, rank, resolution_s=timing.bf_resolution_s, epoch=t0,
                                     slurm_select=timing.slurm_select, passes=passes, power_ups=ups,
                                     plan_select=timing.plan_select, power_scan_s=timing.power_save_interval_s,
                                     main_delay_s=timing.submit_s if timing.bf_sees_submit else 0.0,
                                     power_scan_strict=timing.power_scan_strict, will_run=timing.will_run,
                                     kill_wait_s=timing.kill_wait_s, bf_depths=depths,
                                     release_s=timing.release_s, bf_sees_end=timing.bf_sees_end,
                                     kill_clock=check_clock(timing.config_epoch, t0) if timing.kill_at_check else None,
                                     killed=np.isin(table.id, [j["id"] for j in jobs if j["state"] == "TIMEOUT"]),
                                     **kw)
        if timing.power_start and scaling:
            engine.set_power_start(*power_at_start(record, site, t0))
    engine.run_eff = effective_runs(table.run, table.limit, timing)
    engine.cluster.ready_clock = config_clock(timing, t0)
    engine.idle_since = initial_idle_since(machine.nodes, timing)
    if scaling and timing.reservations > 1:  # the engine refuses this at construction (see SlurmTiming)
        engine.reservations = timing.reservations
    work_energy(engine, 0.0)  # the nodes' power states from the first submit until the engine's first event
    out = engine.run()
    end = np.nanmax(out.end) if len(table) else 0.0
    tl_t, tl_w = np.asarray(out.timeline["t"]), np.asarray(out.timeline["watts"])
    keep = tl_t <= end
    edges = np.append(tl_t[keep], end)
    meter = float(np.sum(tl_w[keep] * np.diff(edges)))
    # jobs hold their nodes release_s past their recorded end: the end reported is the recorded one
    ends = out.end - timing.release_s
    work = engine.run_eff - timing.release_s
    energy = work_energy.joules(engine, out.begin, work, float(np.nanmax(ends)) if len(table) else 0.0)
    return {"id": table.id.tolist(), "start": np.floor(out.begin).tolist(), "end": ends.tolist(),
            "power_ups": counter.count, "energy_j": energy,
            "energy_meter_j": meter} | ({"power_log": counter.log} if trace else {})


def cut_short_cycles(record: dict, t0: float) -> dict[float, int]:
    """The backfill cycles Slurm cut short, as {cycle start in simulated time (a ``record["bf_cycles"]`` entry
    less ``t0``, as ``simulate_record`` schedules it): jobs it tested}: a cycle that ended
    (``record["ctld_events"]["bf_end"]``, matched to the latest recorded cycle start before it) at least
    bf_yield_interval (2 s) after it began, so it yielded its locks at least once, having tested fewer jobs than
    were pending in the real run when it began (a job started in its second counts as pending: the cycle may
    have started it). A quick cycle may report a few jobs fewer than were pending, e.g. one submitted within
    its second; that is not a cut. The recorded starts come from sdiag and may lie a fraction of a second after
    the cycle's real start."""
    cycles = sorted(record.get("bf_cycles") or [])
    jobs = [(j["submit"], j.get("start")) for j in record["jobs"]]
    out = {}
    for e in (record.get("ctld_events") or {}).get("bf_end") or []:
        end = float(e[0])
        began = [c for c in cycles if c <= end + 0.5]
        if not began or end - began[-1] < BF_YIELD_INTERVAL_S:
            continue
        c = began[-1]
        if int(e[2]) < sum(1 for sub, start in jobs if sub <= c and (start is None or start >= math.floor(c))):
            out[c - t0] = int(e[2])
    return out


def power_at_start(record: dict, site: Site, t0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(off, shutting, since): the replay machine's nodes the record shows powered down and powering down at
    the first submit ``t0`` (the last change at or before it), and for the latter since when (seconds after
    ``t0``: when the recorder first saw that power-down); a node first seen after ``t0`` counts as on."""
    off, shutting, since = [], [], []
    for k, host in enumerate(_replay_hosts(site)):
        changes = record.get("power", {}).get(host) or []
        seen = [(t, state) for t, state in changes if t <= t0]
        if not seen:
            continue
        t, state = seen[-1]
        if state == "off":
            off.append(k)
        elif state == "shutting":
            shutting.append(k)
            since.append(t - t0)
    return (np.array(off, dtype=np.int64), np.array(shutting, dtype=np.int64), np.array(since, dtype=float))


def _replay_hosts(site: Site) -> list[str]:
    """The replay machine's hostnames in node-index order (the fidelity partition's node groups)."""
    part = {p.name: set(p.node_groups) for p in site.partitions}.get(PARTITION)
    return [h for g in site.node_groups if part is None or g.name in part for h in g.hostnames]


def cycle_power_ups(record: dict, site: Site, t0: float) -> list[tuple[float, np.ndarray]]:
    """The suite cycle's power-ups the record's journal holds (``record["cycle_journal"]``, kind ``power``,
    action ``POWER_UP``, done), as (seconds after ``t0``, node indices of the replay machine); none before
    ``t0`` (the cluster's start-up) and none without a journal."""
    index, k = {}, 0
    part = {p.name: set(p.node_groups) for p in site.partitions}.get(PARTITION)
    for g in site.node_groups:
        if part is None or g.name in part:
            for h in g.hostnames:
                index[h] = k
                k += 1
    out = []
    for e in record.get("cycle_journal") or []:
        if e.get("kind") == "power" and e.get("action") == "POWER_UP" and e.get("ok") and e.get("t", 0) >= t0:
            nodes = [index[h] for h in e.get("nodes", []) if h in index]
            if nodes:
                out.append((float(e["t"]) - t0, np.array(nodes, dtype=np.int64)))
    return out


def real_power(record: dict, site: Site, t0: float, t_end: float) -> tuple[int, float]:
    """(node power-ups, joules) of the real run from ``t0`` to ``t_end`` (epoch seconds), on the recorded power
    timeline and the jobs' recorded nodes (see the module docstring)."""
    from hostlist import expand_hostlist

    groups = {h: g for g in site.node_groups for h in g.hostnames}
    busy: dict[str, list[tuple[float, float, int]]] = {}
    for j in record["jobs"]:
        if j.get("start") and j.get("end") and j.get("nodelist") and j.get("state") in RAN | {"FAILED", "CANCELLED"}:
            for h in expand_hostlist(j["nodelist"]):
                busy.setdefault(h, []).append((j["start"], j["end"], j["spec"]["cores"]))
    ups, joules = 0, 0.0
    for host, changes in record["power"].items():
        g = groups.get(host)
        if g is None:
            continue
        ups += sum(1 for (_, a), (_, b) in zip(changes, changes[1:]) if a == "off" and b != "off")
        cores = g.cpu.cores * g.cpu.threads_per_core
        cuts = sorted({t0, t_end, *(t for t, _ in changes if t0 < t < t_end),
                       *(t for s, e, _ in busy.get(host, []) for t in (s, e) if t0 < t < t_end)})
        for a, b in zip(cuts, cuts[1:]):
            mid = (a + b) / 2
            state = next((s for t, s in reversed(changes) if t <= mid), changes[0][1])
            if state == "off":
                w = g.power.off_w
            elif state == "on":
                used = min(1.0, sum(c for s, e, c in busy.get(host, []) if s <= mid < e) / cores)
                w = g.power.idle_w + (g.power.busy_w - g.power.idle_w) * used
            else:
                w = g.power.idle_w
            joules += w * (b - a)
    return ups, joules


def compare_record(site: Site, record: dict, timing: SlurmTiming) -> dict:
    """The issue's comparison keys for one recorded replay simulated with ``timing``."""
    jobs = ran_jobs(record)
    t0 = min(j["submit"] for j in jobs)
    sim = simulate_record(site, record, timing)
    by_id = {j["id"]: j for j in jobs}
    real_start = np.array([by_id[i]["start"] - t0 for i in sim["id"]])
    submit = np.array([by_id[i]["submit"] - t0 for i in sim["id"]])
    sim_start = np.array(sim["start"])
    real_end = max(j["end"] for j in jobs)
    ups, joules = real_power(record, site, t0, real_end)
    return {
        "jobs": len(jobs), "jobs_submitted": len(record["jobs"]),
        "kendall_tau": float(kendalltau(real_start, sim_start).statistic),
        "wait_mae_s": float(np.mean(np.abs(real_start - sim_start))),
        "mean_wait_real_s": float(np.mean(real_start - submit)),
        "mean_wait_sim_s": float(np.mean(sim_start - submit)),
        "power_ups_real": ups, "power_ups_sim": sim["power_ups"],
        "energy_real_kwh": joules / 3.6e6, "energy_sim_kwh": sim["energy_j"] / 3.6e6,
        "timeouts_real": sum(j["state"] == "TIMEOUT" for j in jobs),
        "slurm_version": record.get("slurm_version"),
        "real_start_s": real_start.tolist(), "sim_start_s": sim_start.tolist(),
    }


def kill_wait(record: dict) -> float:
    """The replay cluster's KillWait in seconds (``scontrol show config``: ``5 sec``), else Slurm's default."""
    m = re.fullmatch(r"\s*(\d+)\s*sec\s*", (record.get("slurm_conf") or {}).get("KillWait") or "")
    return float(m[1]) if m else KILL_WAIT_S


def recorded_boot_s(record: dict) -> float | None:
    """Median seconds a node spent powering up (sinfo ``#`` until it no longer showed it), None if none did."""
    spans = []
    for changes in record["power"].values():
        for (t, a), (u, _) in zip(changes, changes[1:]):
            if a == "booting":
                spans.append(u - t)
    return float(np.median(spans)) if spans else None


def recorded_idle_at_start(record: dict, suspend_time_s: float) -> float:
    """Seconds the nodes had been idle at the first submit: SuspendTime less the median time (after the first
    submit) at which a node no job had used yet began powering down (sinfo ``%``); 0 if none did."""
    from hostlist import expand_hostlist

    jobs = ran_jobs(record)
    if not jobs:
        return 0.0
    t0 = min(j["submit"] for j in jobs)
    first_use: dict[str, float] = {}
    for j in record["jobs"]:
        if j.get("start") and j.get("nodelist"):
            for h in expand_hostlist(j["nodelist"]):
                first_use[h] = min(first_use.get(h, j["start"]), j["start"])
    downs = []
    for host, changes in record["power"].items():
        shut = [t for t, state in changes if state == "shutting"]
        if shut and shut[0] < first_use.get(host, float("inf")):
            downs.append(shut[0] - t0)
    return float(min(max(suspend_time_s - np.median(downs), 0.0), suspend_time_s)) if downs else 0.0


def time_limit_check_epoch(record: dict) -> float | None:
    """An epoch second at which slurmctld ran its time-limit check: a recorded ``Configuration ... complete``,
    else slurmctld's start (the checks follow it every 30 s), else the backfill cycles' phase (they run on
    the same 30 s clock from the same start, within about half a second); None if the record has none."""
    done = record.get("ctld_events", {}).get("config_done")
    if done:
        return float(np.median([t - (t - done[0][0]) % PERIODIC_TIMEOUT_S for t, _ in done]))
    if record.get("slurmctld_start"):
        return float(record["slurmctld_start"])
    cycles = record.get("bf_cycles") or []
    if not cycles:
        return None
    return float(cycles[0] + np.median([(c - cycles[0] + 15.0) % PERIODIC_TIMEOUT_S - 15.0 for c in cycles]))


def batch_sched_delay(record: dict) -> float:
    """The replay cluster's batch_sched_delay (SchedulerParameters as the record shows them, else Slurm's
    default)."""
    params = str(record.get("slurm_conf", {}).get("SchedulerParameters") or "")
    m = re.search(r"(?:^|,)batch_sched_delay=(\d+)", params)
    return float(m[1]) if m else BATCH_SCHED_DELAY_S


def power_save_interval(record: dict) -> float:
    """The replay cluster's power_save_interval (SlurmctldParameters as the record shows them, else Slurm's
    default, 10 s)."""
    params = str(record.get("slurm_conf", {}).get("SlurmctldParameters") or "")
    m = re.search(r"(?:^|,)power_save_interval=(\d+)", params)
    return float(m[1]) if m else POWER_SAVE_INTERVAL_S


def power_scan_strict(version: str | None) -> bool:
    """Whether slurmctld's power thread compares strictly (24.11.5's source; 22.05.8's does not, see
    :func:`~slurm_plugin.sim.slurm_timing.power_scan_due`): versions from 23 on are taken as 24.11 (not
    checked between them), unknown ones as 22.05."""
    m = re.match(r"(\d+)\.", version or "")
    return bool(m) and int(m[1]) >= 23


def priority_calc_period(record: dict) -> float:
    """slurmctld's PriorityCalcPeriod in the record's cluster (seconds): as recorded (``slurm_conf``, records
    from now on), else as the suite rendered it: 1 minute where it runs slurmdbd (the container clusters,
    ``args.containers``), 5 minutes (Slurm's default) on the local cluster."""
    text = (record.get("slurm_conf") or {}).get("PriorityCalcPeriod") or ""
    m = re.fullmatch(r"\s*(\d+):(\d+):(\d+)\s*", text)  # scontrol show config: 00:05:00
    if m and int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3]) > 0:
        return float(int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3]))
    return 60.0 if record.get("containers") else PRIORITY_CALC_PERIOD_S


def timing_switches() -> tuple[str, ...]:
    """The on/off models :func:`replay_timing` takes (its bool keyword arguments), in its order."""
    import inspect

    return tuple(n for n, p in inspect.signature(replay_timing).parameters.items() if isinstance(p.default, bool))


def parse_timing_switches(items: list[str] | tuple[str, ...]) -> dict[str, bool]:
    """``NAME=on|off`` items (``true``/``false``, ``1``/``0`` too) -> :func:`replay_timing` keyword arguments;
    ValueError naming the item and the choices for an unknown switch or value."""
    names, out = timing_switches(), {}
    values = {"on": True, "true": True, "1": True, "off": False, "false": False, "0": False}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name.strip() not in names or value.strip().lower() not in values:
            raise ValueError(f"--timing {item!r}: expected NAME=on|off with NAME one of {', '.join(names)}")
        out[name.strip()] = values[value.strip().lower()]
    return out


def replay_timing(record: dict, site_data: dict, release_s: float = 1.0, submit_s: float = 1.5,
                  batch_passes: bool = False, power_scan: bool = POWER_SCAN,
                  power_start: bool = POWER_START, priority_calc: bool = PRIORITY_CALC,
                  factor_at_submit: bool = FACTOR_AT_SUBMIT, bf_sees_submit: bool = BF_SEES_SUBMIT,
                  will_run: bool = WILL_RUN, bf_depth: bool = BF_DEPTH, kill_at_check: bool = KILL_AT_CHECK,
                  bf_sees_end: bool = BF_SEES_END) -> SlurmTiming:
    """The Slurm timing a fidelity run switches on, from the replay site's settings and the record:
    SuspendTime/SuspendTimeout as configured, the recorded median boot, recorded overruns, a reservation per
    pending job (up to :data:`BF_RESERVATIONS`), SiteFactor, jobs on booted nodes released at slurmctld's
    time-limit checks, the nodes' recorded idle time at the first submit, placement as slurmctld's with power
    saving, the suite cycle's recorded power-ups where the record has its journal (the container replays),
    ``release_s`` of start latency after a job ends and ``submit_s`` after a submit; with ``batch_passes``
    new submits are scheduled at slurmctld's batch passes (from its recorded start) instead of ``submit_s``
    later (off: it made the power-up counts of the records worse, results/sim/fidelity/HISTORY.md); with
    ``power_scan`` the idle power-down runs at slurmctld's power scans (power_save_interval, whole seconds;
    see :mod:`~slurm_plugin.sim.slurm_timing`); with ``power_start`` the nodes start as the record shows them at
    the first submit (:func:`power_at_start`); with ``priority_calc`` a pending job's age factor changes at
    slurmctld's priority recalculations (PriorityCalcPeriod from slurmctld's start, :func:`priority_calc_period`)
    instead of continuously; with ``factor_at_submit`` a job's first recorded SiteFactor counts from its submit
    (:func:`site_factor_at_start`); with ``will_run`` backfill plans start when Slurm's select plugin
    estimates (KillWait as recorded, :func:`kill_wait`); with ``bf_depth`` a backfill cycle Slurm cut short
    tests only as many jobs as it did (:func:`cut_short_cycles`); with ``kill_at_check`` a job killed at its
    limit ends at the time-limit check that killed it (:func:`time_limit_check_epoch`'s clock); with
    ``bf_sees_end`` a backfill cycle takes the nodes of every job whose run has ended."""
    s = site_data["slurm"]
    power = 0 <= s.get("suspend_time", -1) < 365 * 86400
    check = time_limit_check_epoch(record)
    start = record.get("slurmctld_start") or time_limit_check_epoch(record) or 0.0
    return SlurmTiming(release_s=release_s, submit_s=0.0 if batch_passes else submit_s, overrun=True,
                       site_factor=True, reservations=BF_RESERVATIONS, sched_start=float(start),
                       batch_sched_delay_s=batch_sched_delay(record) if batch_passes else None,
                       boot_s=recorded_boot_s(record) if power else None,
                       shutdown_s=float(s.get("suspend_timeout", 60)) if power else None,
                       suspend_time_s=float(s["suspend_time"]) if power else None,
                       config_tick_s=PERIODIC_TIMEOUT_S if power and check is not None else None,
                       config_epoch=check or 0.0, bf_resolution_s=BF_RESOLUTION_S, slurm_select=True,
                       cycle_power=bool(record.get("cycle_journal")),
                       power_save_interval_s=power_save_interval(record) if power and power_scan else None,
                       power_scan_strict=power_scan_strict(record.get("slurm_version")),
                       power_start=power and power_start,
                       priority_calc_period_s=priority_calc_period(record) if priority_calc else None,
                       priority_epoch=float(start), site_factor_submit=factor_at_submit,
                       bf_sees_submit=bf_sees_submit and not batch_passes,
                       will_run=will_run, kill_wait_s=kill_wait(record), bf_depth=bf_depth,
                       kill_at_check=kill_at_check and check is not None, bf_sees_end=bf_sees_end,
                       idle_at_start_s=recorded_idle_at_start(record, float(s["suspend_time"])) if power else 0.0)
