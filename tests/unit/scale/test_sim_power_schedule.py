"""A power policy that never powers a node down must schedule exactly like always-on: power mode changes only
the boot delays, not what backfill may do (it once kept every whole-node job off reserved nodes)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from slurm_plugin.sim.engine import Engine
from slurm_plugin.sim.hooks import ranking
from slurm_plugin.sim.machine import homogeneous
from slurm_plugin.workload import read_swf


@dataclass(frozen=True)
class NeverDown:
    """Asked every 10 minutes, never acts: every node stays on, but the engine runs in power mode."""

    name: str = "never-down"
    interval_s: float = 600.0

    def decide(self, view):
        empty = np.empty(0, dtype=np.int64)
        return empty, empty


def test_power_mode_without_power_actions_schedules_like_always_on(workloads):
    w = read_swf(workloads / "swf" / "lublin_256.swf")
    js = w.jobs.take(np.arange(1500))
    m = homogeneous(*w.machine)
    on = Engine(m, js, ranking("fcfs"), backfill=True).run()
    power = Engine(m, js, ranking("fcfs"), backfill=True, scaling=NeverDown()).run()
    assert np.array_equal(on.begin, power.begin)
    assert abs(on.energy_j - power.energy_j) <= 1e-3 * on.energy_j  # the two meters round differently
