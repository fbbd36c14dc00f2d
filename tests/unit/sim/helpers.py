"""Builders for small hand-checked simulations and the per-event invariant checker."""

from __future__ import annotations

import numpy as np

from slurm_plugin.sim.engine import Engine
from slurm_plugin.sim.hooks import ranking
from slurm_plugin.sim.machine import GroupSpec, Machine
from slurm_plugin.workload.jobs import JobTable, arch_mask


def machine(*groups: GroupSpec) -> Machine:
    return Machine("test", tuple(groups))


def nodes(count: int, cores: int = 1, name: str = "n", **kw) -> GroupSpec:
    return GroupSpec(name=name, count=count, cores=cores, **kw)


def jobs(*rows: dict, gres_names=(), gres_types=()) -> JobTable:
    """Rows of dict(submit, run, limit=run, nodes=1, cores=1, arch=(), gres=(name, type, count))."""
    cols: dict[str, list] = {k: [] for k in ("id", "submit", "run", "limit", "nodes", "cores", "mem_gb",
                                             "arch_mask", "gres_name", "gres_type", "gres_count")}
    names, types = list(gres_names), list(gres_types)
    for i, r in enumerate(rows, 1):
        cols["id"].append(i)
        cols["submit"].append(r["submit"])
        cols["run"].append(r["run"])
        cols["limit"].append(r.get("limit", r["run"]))
        cols["nodes"].append(r.get("nodes", 1))
        cols["cores"].append(r.get("cores", 1))
        cols["mem_gb"].append(r.get("mem", 0.0))
        cols["arch_mask"].append(arch_mask(r.get("arch", ())))
        name, typ, cnt = r.get("gres", (None, None, 0))
        if name and name not in names:
            names.append(name)
        if typ and typ not in types:
            types.append(typ)
        cols["gres_name"].append(names.index(name) if name else -1)
        cols["gres_type"].append(types.index(typ) if typ else -1)
        cols["gres_count"].append(cnt)
    return JobTable.build(cols, gres_names=tuple(names), gres_types=tuple(types))


class Invariants:
    """Observer checking, after every event: no node over capacity, no job begun before its submit, and the
    reservation of the head job never moving later (and kept when it is allocated) unless a job of higher
    priority started in front of it."""

    def __init__(self) -> None:
        self.events = 0

    def __call__(self, e: Engine, t: float) -> None:
        c = e.cluster
        self.events += 1
        assert (c.free_c >= 0).all() and (c.free_c <= c.cap_c).all(), "cores over capacity"
        assert (c.free_g >= 0).all() and (c.free_g <= c.cap_g).all(), "GRES over capacity"
        assert (c.free_m >= -1e-9).all(), "memory over capacity"
        assert c.total_free_cores == int(c.free_c.sum())
        begun = ~np.isnan(e.begin)
        assert (e.begin[begun] >= e.jobs.submit[begun]).all(), "job begun before submit"
        for j, times in e.resv_history.items():
            assert all(b <= a + 1e-9 for a, b in zip(times, times[1:])), f"reservation of {j} delayed: {times}"
            if begun[j] and times and e.resv is not None and e.resv.job == j:
                # the promise is the allocation; a job placed on powered-down nodes then waits for the boot
                assert e.alloc[j] <= times[-1] + 1e-9, f"job {j} allocated after its reservation"


def simulate(m: Machine, js: JobTable, policy: str = "fcfs", backfill: bool = True, **kw) -> Engine:
    check = Invariants()
    e = Engine(m, js, ranking(policy), backfill=backfill, observer=check, **kw)
    e.outcome = e.run()
    assert check.events > 0
    return e
