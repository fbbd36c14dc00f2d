"""Energy vs wait of the power policies in the simulator, on the same workload and ranking in one run.

Rows: ``always-on`` (no power saving), ``idle-timer`` (Slurm's SuspendTime: a node goes down after being idle
that long; jobs placed on an off node boot it), ``hetsched`` (:class:`~.scaling.WarmPoolPower`: the
break-even rule on per-group arrival rates), ``hetsched+pid`` (the same with PID headroom on utilization),
``hetsched+arch`` (the same with the architecture controller moving warm pools to the cheapest CPU group) and
``pid`` (the PID controller alone, :class:`~.scaling.PidPower`, whose stability over the run is reported).
``pid_step`` is measured in the simulator (:func:`pid_sim_step`): the PID controller alone
(:class:`~.scaling.PidPower`) on a 40-node machine with 120 s boots whose busy nodes step 12 -> 24 -> 12;
:func:`pid_step_response` is the same controller on the bare integrating plant it was tuned on (a unit check).
"""

from __future__ import annotations

import logging

import numpy as np

from ..scale.pid import DEFAULT_GAINS, PidGains, PidState, pid_step
from ..scale.warm import DEFAULT_WAIT_PRICE_W, DEFAULT_WINDOW_S
from ..workload.jobs import JobTable
from .engine import Engine
from .hooks import IdleSuspend, ranking
from .machine import homogeneous
from .metrics import compute_metrics
from .run import Prepared
from .scaling import PidPower, PortableDemand, WarmPoolPower

log = logging.getLogger(__name__)


def pid_step_response(gains: PidGains = DEFAULT_GAINS, periods: int = 30, target: float = 10.0,
                      band: float = 0.05) -> dict:
    """Settling periods (within ``band`` of the target from then on) and overshoot of a unit step."""
    y, state, ys = 0.0, PidState(), []
    for _ in range(periods):
        u, state = pid_step(gains, state, target, y, gains.unit_s)  # one-unit periods
        y += u
        ys.append(y)
    settle = next(i for i in range(periods) if all(abs(v - target) <= band * target for v in ys[i:])) + 1
    return {"settle_periods": settle, "overshoot": max(0.0, max(ys) - target) / target, "trajectory": ys}


def settling(values: list[float], final: float, band: float = 0.05) -> dict:
    """Periods until ``values`` stay within ``band`` of ``final`` (1 = from the first period on) and the
    overshoot past it, as a fraction of ``final`` (in the direction of the step from ``values[0]``)."""
    settle = next((i + 1 for i in range(len(values))
                   if all(abs(v - final) <= band * final for v in values[i:])), None)
    up = final >= values[0]
    past = max((v - final if up else final - v) for v in values)
    return {"settle_periods": settle, "overshoot": max(0.0, past) / final}


def pid_sim_step(gains: PidGains = DEFAULT_GAINS, nodes: int = 40, base: int = 12, target_util: float = 0.75,
                 phase_s: float = 3 * 3600.0) -> dict:
    """The PID controller's step response in the simulator. ``nodes`` one-core nodes with the SWF default watts and
    120 s boots; ``base`` whole-node jobs run from 0 to 2 phases, ``base`` more from 1 to 3 phases, so busy nodes
    step up (to ``2 base``) at ``phase_s`` and down at ``2 phase_s``. The powered count (on + booting) per
    control period should go to ``busy / target_util``. Returns the up and down steps' settling and overshoot
    (``settle_periods``/``overshoot`` = the up step, the issue's figure) and the trajectory."""
    run = 2 * phase_s
    rows = {"submit": [0.0] * base + [phase_s] * base, "run": [run] * (2 * base), "limit": [run] * (2 * base),
            "nodes": [1] * (2 * base), "cores": [1] * (2 * base)}
    policy = PidPower(homogeneous(nodes, 1, name="pid-step"), target_util=target_util, gains=gains)
    Engine(policy.machine, JobTable.build(rows), ranking("fcfs"), backfill=True, scaling=policy).run()
    t = np.array([x[0] for x in policy.trace])
    powered = np.array([x[1][0] for x in policy.trace], dtype=float)
    after = lambda t0, t1: powered[(t > t0) & (t <= t1)].tolist()  # noqa: E731  periods after a step
    up = settling(after(phase_s, 2 * phase_s), 2 * base / target_util)
    down = settling(after(2 * phase_s, 3 * phase_s), base / target_util)
    return {**up, "down_step": down, "plant": f"simulator: {nodes} one-core nodes, 120 s boot, busy {base} -> "
            f"{2 * base} -> {base} nodes, target utilization {target_util:.0%}, period {policy.interval_s:.0f} s",
            "trajectory": {"t": t.tolist(), "powered": powered.tolist(),
                           "busy": [x[2][0] for x in policy.trace],
                           "reference": [x[2][0] / target_util for x in policy.trace]}}


def pid_stability(pid: PidPower, window: int = 10) -> dict:
    """How steady the PID controller was over a finished run (a diurnal workload): per day, the periods it moved
    the powered count and its reversals (a move up followed by a move down, or the reverse, within ``window``
    periods), next to the reversals of its reference ``round(busy / target)`` itself (per group, at most the
    group's size: the load's own ups and downs; more reversals than those would be oscillation the controller
    adds), and the mean distance in nodes between powered and that reference."""
    powered = np.array([sum(x[1]) for x in pid.trace], dtype=float)
    busy = np.array([sum(x[2]) for x in pid.trace], dtype=float)
    sizes = np.array([g.count for g in pid.machine.groups], dtype=float)
    # what the controller aims at: busy / target per group, but never more than the group has
    reference = np.array([np.minimum(np.array(x[2]) / pid.target_util, sizes).sum() for x in pid.trace])
    days = max((pid.trace[-1][0] - pid.trace[0][0]) / 86400.0, 1e-9) if len(pid.trace) > 1 else 1.0

    def reversals(values: np.ndarray) -> tuple[int, int]:
        moves = [(i, d) for i, d in enumerate(np.sign(np.diff(values))) if d != 0]
        return len(moves), sum(1 for (i, a), (k, b) in zip(moves, moves[1:]) if a != b and k - i <= window)

    moves, rev = reversals(powered)
    _, ref_rev = reversals(np.round(reference))
    return {"moves_per_day": moves / days, "reversals_per_day": rev / days,
            "reference_reversals_per_day": ref_rev / days, "window_periods": window,
            "mean_abs_error_nodes": float(np.abs(powered - reference).mean()) if len(busy) else 0.0,
            "trajectory": {"t": [x[0] for x in pid.trace], "powered": powered.tolist(), "busy": busy.tolist(),
                           "reference": reference.tolist()}}


POWER_RUNS = ("always-on", "idle-timer", "hetsched", "hetsched+pid", "hetsched+arch", "pid")


def power_policy(p: Prepared, name: str, suspend_time_s: float, grace_s: float, wait_price_w: float):
    """The scaling policy of row ``name`` (:data:`POWER_RUNS`; None = always on), built fresh for one run."""
    warm = dict(grace_s=grace_s, wait_price_w=wait_price_w)
    return {"always-on": lambda: None,
            "idle-timer": lambda: IdleSuspend(suspend_time_s),
            "hetsched": lambda: WarmPoolPower(p.machine, **warm),
            "hetsched+pid": lambda: WarmPoolPower(p.machine, use_pid=True, name="hetsched+pid", **warm),
            "hetsched+arch": lambda: WarmPoolPower(p.machine, name="hetsched+arch", **warm,
                                                   portable=PortableDemand(p.machine, p.workload.jobs,
                                                                           DEFAULT_WINDOW_S)),
            "pid": lambda: PidPower(p.machine)}[name]()


def policy_rows(p: Prepared, specs: list) -> list[dict]:
    """One :func:`evaluate`-style row per (label, PolicySpec), each simulated as ``sim run --policy-file`` runs
    it (:func:`.policy.simulate_policy`, EASY backfill)."""
    from .policy import simulate_policy

    rows = []
    for label, spec in specs:
        row, out = simulate_policy(p, spec, backfill=True)
        m = row["metrics"]
        rows.append({"policy": label, "energy_kwh": m["energy_kwh"], "avg_wait_s": m["avg_wait_s"],
                     "utilization": m["utilization"], "p95_wait_s": m["p95_wait_s"], "avg_bsld": m["avg_bsld"],
                     "cost": m.get("cost"), "policy_spec": spec.as_dict(), "timeline": out.timeline})
        log.info("%s: %.1f kWh, avg wait %.0f s", label, m["energy_kwh"], m["avg_wait_s"])
    return rows


def evaluate(p: Prepared, suspend_time_s: float = 600.0, grace_s: float = 120.0,
             wait_price_w: float = DEFAULT_WAIT_PRICE_W, policy: str = "fcfs",
             jobs: int | None = 1) -> tuple[list[dict], dict]:
    """One row per power policy (same workload, same ranking, EASY backfill), and the PID controller's
    stability over that run (:func:`pid_stability` of the ``pid`` row). The runs go to ``jobs`` processes
    (None: every core) with one progress bar; the rows are the serial ones."""
    from .parallel import run_all
    done = lambda i, r: log.info("%s: %.1f kWh, avg wait %.0f s", r["policy"], r["energy_kwh"], r["avg_wait_s"])  # noqa: E731
    rows = run_all(_power_run, (p, suspend_time_s, grace_s, wait_price_w, policy), POWER_RUNS, jobs,
                   desc=f"{p.workload.name} power", on_result=done)
    return rows, next(r for r in rows if r["policy"] == "pid").pop("stability")


def _power_run(shared: tuple, name: str) -> dict:
    """One row of :func:`evaluate` (in a worker process); the ``pid`` row carries its ``stability``."""
    p, suspend_time_s, grace_s, wait_price_w, policy = shared
    scaling = power_policy(p, name, suspend_time_s, grace_s, wait_price_w)
    rank = ranking(policy, p.site, float(p.machine.cores))
    out = Engine(p.machine, p.workload.jobs, rank, backfill=True, scaling=scaling).run()
    m = compute_metrics(p.workload.jobs, out, p.machine)
    row = {"policy": name, "energy_kwh": m["energy_kwh"], "avg_wait_s": m["avg_wait_s"],
           "utilization": m["utilization"], "p95_wait_s": m["p95_wait_s"],
           "avg_bsld": m["avg_bsld"], "cost": m.get("cost"), "timeline": out.timeline}
    if name == "pid":
        row["stability"] = pid_stability(scaling)
    return row
