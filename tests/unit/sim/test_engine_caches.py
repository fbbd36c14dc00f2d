"""The general loop's caches answer what a fresh computation would, after every event of a run with power states
(nodes shutting down, off, booting) on a heterogeneous site: a remembered head plan still valid by its groups'
change counters equals a fresh plan, and a request shape remembered as fitting nowhere fits nowhere."""

import numpy as np
import pytest

from slurm_plugin.sim.engine import Engine
from slurm_plugin.sim.hooks import ranking, scaling
from slurm_plugin.sim.run import prepare


class CacheCheck:
    def __init__(self) -> None:
        self.plans = self.unfit = 0

    def __call__(self, e: Engine, t: float) -> None:
        c = e.cluster
        for s, r in enumerate(e._shape_req):
            if e._unfit_at[s] == e._grown_of(s):
                self.unfit += 1
                assert c.candidates(r) is None, f"shape {r} remembered as fitting nowhere fits now at t={t}"
        for r, (ver, plan) in list(c._plans.items()):
            now = tuple(c.version[g] for g, _ in r.options) if len(r.options) > 1 else c.version[r.options[0][0]]
            if now != ver:
                continue
            self.plans += 1
            del c._plans[r]
            fresh = c.plan(plan.job, r, t)
            c._plans[r] = (ver, plan)
            assert fresh.time == plan.time and np.array_equal(fresh.mask, plan.mask), f"stale plan at t={t}"


@pytest.mark.parametrize("power", ["idle-suspend", "always-on"])
def test_caches_match_fresh_answers(power):
    p = prepare("synthetic:jobs=300,seed=3", "demo")
    check = CacheCheck()
    scale = scaling(power, **({"suspend_time_s": 120.0} if power == "idle-suspend" else {}))
    Engine(p.machine, p.workload.jobs, ranking("fcfs"), backfill=True, scaling=scale, observer=check).run()
    assert check.plans > 0 and check.unfit > 0  # both caches were exercised


class NoSkip(Engine):
    """The engine without the settled-window shortcut: every backfill pass runs in full."""

    def _bf_settled(self, seen: tuple) -> bool:
        return False


class CountSkips(Engine):
    skipped = 0

    def _bf_settled(self, seen: tuple) -> bool:
        hit = super()._bf_settled(seen)
        self.skipped += hit
        return hit


@pytest.mark.parametrize("seed", [3, 4])
def test_skipped_backfill_passes_start_nothing(seed):
    """Skipping a backfill pass whose window is settled (Engine._bf_settled) moves no job: same start and
    allocation times as running every pass in full (idle suspend: passes at the policy's ticks, nodes off and
    booting), and passes were skipped."""
    p = prepare(f"synthetic:jobs=1200,seed={seed}", "demo")
    fast, full = (cls(p.machine, p.workload.jobs, ranking("fcfs"), backfill=True,
                      scaling=scaling("idle-suspend", suspend_time_s=120.0)) for cls in (CountSkips, NoSkip))
    a, b = fast.run(), full.run()
    assert fast.skipped > 0
    np.testing.assert_array_equal(a.begin, b.begin)
    np.testing.assert_array_equal(fast.alloc, full.alloc)
