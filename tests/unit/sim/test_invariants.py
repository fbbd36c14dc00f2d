"""Invariants on every event (capacity, submit order, reservations) over random and real workloads."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_plugin.sim.cluster import Reservation
from slurm_plugin.sim.engine import Engine
from slurm_plugin.sim.hooks import IdleSuspend, ranking
from slurm_plugin.sim.machine import GroupSpec
from slurm_plugin.sim.rlrepro import PUBLISHED, reproduce
from slurm_plugin.workload import read_swf

from .helpers import Invariants, jobs, machine, simulate

HET = machine(GroupSpec("x86", 3, arch="x86_64", cores=4, memory_gb=16, boot_s=60, shutdown_s=10),
              GroupSpec("arm", 2, arch="aarch64", cores=8, memory_gb=32, boot_s=30, shutdown_s=10),
              GroupSpec("gpu", 2, arch="x86_64", cores=8, memory_gb=64, gres={("gpu", "a100"): 2}, boot_s=90))

job_rows = st.lists(st.fixed_dictionaries({
    "submit": st.integers(0, 500), "run": st.integers(0, 300), "slack": st.integers(0, 200),
    "nodes": st.integers(1, 2), "cores": st.integers(1, 4), "mem": st.sampled_from([0.0, 2.0, 8.0]),
    "kind": st.sampled_from(["any", "arm", "x86", "gpu"])}), min_size=1, max_size=25)


def _rows(raw):
    out = []
    for r in raw:
        row = dict(submit=r["submit"], run=r["run"], limit=r["run"] + r["slack"] + 1, nodes=r["nodes"],
                   cores=r["cores"], mem=r["mem"])
        if r["kind"] == "arm":
            row["arch"] = ("aarch64",)
        elif r["kind"] == "x86":
            row["arch"] = ("x86_64",)
        elif r["kind"] == "gpu":
            row["gres"] = ("gpu", "a100", 1)
        out.append(row)
    return out


@settings(max_examples=200, deadline=None)
@given(job_rows, st.sampled_from(["fcfs", "sjf", "wfp3", "f1", "multifactor"]), st.booleans(), st.booleans())
def test_random_workloads_keep_invariants(raw, policy, backfill, suspend):
    js = jobs(*_rows(raw))
    e = simulate(HET, js, policy=policy, backfill=backfill,
                 scaling=IdleSuspend(suspend_time_s=50) if suspend else None)
    assert not np.isnan(e.begin).any(), "every job that fits must start"
    run = np.minimum(js.run, js.limit)
    assert e.outcome.group_core_s.sum() == pytest.approx(float((run * js.nodes * js.cores).sum()))
    assert (e.end - e.begin == run).all()


def test_checker_catches_a_backfill_that_delays_the_reservation(monkeypatch):
    """The invariant checker must fail on a broken planner (here: one that promises the head 'never')."""
    orig = Engine._reservation

    def broken(self, j, r, t, **kw):
        res = orig(self, j, r, t, **kw)
        return Reservation(res.job, float("inf"), np.zeros_like(res.mask))

    monkeypatch.setattr(Engine, "_reservation", broken)
    js = jobs(dict(submit=0, run=100, nodes=2), dict(submit=1, run=50, nodes=4),
              dict(submit=2, run=500, nodes=2))
    # the long job jumps ahead of the head, whose next plan moves from 100 to 502
    with pytest.raises(AssertionError, match=r"reservation of 1 delayed: \[100.0, 502.0\]"):
        simulate(machine(GroupSpec("n", 4)), js)


def test_lublin_slice_keeps_invariants(workloads):
    w = read_swf(workloads / "swf" / "lublin_256.swf")
    js = w.jobs.take(np.arange(1500))
    from slurm_plugin.sim.machine import homogeneous
    check = Invariants()
    e = Engine(homogeneous(*w.machine), js, ranking("fcfs"), backfill=True, observer=check)
    out = e.run()
    assert check.events == out.events > 2000
    assert not np.isnan(out.begin).any()


@pytest.mark.parametrize("backfill", [False, True])
def test_rlscheduler_lublin_table_reproduced(workloads, backfill):
    """RLScheduler's published Lublin-1 averages (FCFS, SJF, F1) within 1 % under its semantics."""
    from slurm_plugin.sim.machine import homogeneous
    w = read_swf(workloads / "swf" / "lublin_256.swf")
    got = reproduce(homogeneous(*w.machine), w.jobs, ["fcfs", "sjf", "f1"], backfill)
    for policy, vals in got.items():
        assert np.mean(vals) == pytest.approx(PUBLISHED[backfill][policy], rel=0.01), policy
