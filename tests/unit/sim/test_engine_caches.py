"""The general loop's caches answer what a fresh computation would, after every event of a run with power states
(nodes shutting down, off, booting) on a heterogeneous site: a remembered head plan still valid by its groups'
change counters equals a fresh plan, a request shape remembered as fitting nowhere fits nowhere, and the
candidates read from the nodes' room in Weight order (and FirstFit's one node of them) are those of the node
arrays themselves."""

import numpy as np
import pytest

from slurm_plugin.sim.engine import Engine
from slurm_plugin.sim.power import ON, SHUTTING
from slurm_plugin.sim.hooks import ranking, scaling
from slurm_plugin.sim.run import prepare


def node_candidates(c, r, exclude=None) -> np.ndarray:
    """Candidates of a partial-node request without GRES columns, from the per-node arrays: option groups in
    order, each group's nodes ascending."""
    ok = (c.free_c >= r.cores) & (c.state != SHUTTING) & ((c.free_m >= r.mem) | (r.mem <= 0))
    if exclude is not None:
        ok &= ~exclude
    idx = np.concatenate([np.arange(c.start[g], c.end[g]) for g in r.groups])
    return idx[ok[idx]]


class CacheCheck:
    def __init__(self) -> None:
        self.plans = self.unfit = self.weight_order = 0

    def __call__(self, e: Engine, t: float) -> None:
        c = e.cluster
        some = np.zeros(len(c.state), dtype=bool)
        some[::3] = True
        for r in e._shape_req:
            if c._span(r) is None:
                continue
            for exclude in (None, some):
                want = node_candidates(c, r, exclude)
                got = c.candidates(r, exclude)
                assert (got is None) == (len(want) < r.nodes), f"{r} at t={t}"
                if got is not None:
                    assert np.array_equal(got, want), f"{r} at t={t}"
                if r.nodes == 1:
                    on = want[c.state[want] == ON]
                    first = on[:1] if len(on) else want[:1]
                    pick = c.first_fit(r, exclude)
                    assert (pick is None and not len(want)) or np.array_equal(pick, first), f"{r} at t={t}"
                self.weight_order += 1
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
    assert check.plans > 0 and check.unfit > 0 and check.weight_order > 0  # every cache was exercised


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
