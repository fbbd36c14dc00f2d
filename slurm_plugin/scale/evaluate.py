"""Energy vs wait of the power policies in the simulator, on the same workload and ranking in one run.

Rows: ``always-on`` (no power saving), ``idle-timer`` (Slurm's SuspendTime: a node goes down after being idle
that long; jobs placed on an off node boot it), ``hetsched`` (:class:`~.sim_policy.WarmPoolPower`: shorter
grace, warm pool) and ``hetsched+pid`` (the same with PID headroom on utilization).
``pid_step`` is the PID controller's unit-step response on the integrating plant "powered nodes += output
per period" (the model its gains were tuned on), not a simulator measurement.
"""

from __future__ import annotations

import logging

from ..sim.engine import Engine
from ..sim.hooks import IdleSuspend, ranking
from ..sim.metrics import compute_metrics
from ..sim.run import Prepared
from .pid import DEFAULT_GAINS, PidGains, PidState, pid_step
from .sim_policy import WarmPoolPower

log = logging.getLogger(__name__)


def pid_step_response(gains: PidGains = DEFAULT_GAINS, periods: int = 30, target: float = 10.0,
                      band: float = 0.05) -> dict:
    """Settling periods (within ``band`` of the target from then on) and overshoot of a unit step."""
    y, state, ys = 0.0, PidState(), []
    for _ in range(periods):
        u, state = pid_step(gains, state, target, y, 1.0)
        y += u
        ys.append(y)
    settle = next(i for i in range(periods) if all(abs(v - target) <= band * target for v in ys[i:])) + 1
    return {"settle_periods": settle, "overshoot": max(0.0, max(ys) - target) / target, "trajectory": ys}


def evaluate(p: Prepared, suspend_time_s: float = 600.0, grace_s: float = 120.0, warm_fraction: float = 0.05,
             policy: str = "fcfs") -> list[dict]:
    """One row per power policy (same workload, same ranking, EASY backfill)."""
    rows = []
    for name, scaling in (("always-on", None), ("idle-timer", IdleSuspend(suspend_time_s)),
                          ("hetsched", WarmPoolPower(p.machine, grace_s=grace_s, warm_fraction=warm_fraction)),
                          ("hetsched+pid", WarmPoolPower(p.machine, grace_s=grace_s, warm_fraction=warm_fraction,
                                                         use_pid=True, name="hetsched+pid"))):
        rank = ranking(policy, p.site, float(p.machine.cores))
        out = Engine(p.machine, p.workload.jobs, rank, backfill=True, scaling=scaling).run()
        m = compute_metrics(p.workload.jobs, out, p.machine)
        rows.append({"policy": name, "energy_kwh": m["energy_kwh"], "avg_wait_s": m["avg_wait_s"],
                     "utilization": m["utilization"], "p95_wait_s": m["p95_wait_s"],
                     "avg_bsld": m["avg_bsld"], "cost": m.get("cost"), "timeline": out.timeline})
        log.info("%s: %.1f kWh, avg wait %.0f s", name, m["energy_kwh"], m["avg_wait_s"])
    return rows
