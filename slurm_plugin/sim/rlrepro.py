"""Reproduction of RLScheduler's published Lublin-1 table (``compare-pick-jobs.py``: 10 windows of 1,024
consecutive jobs, seed 1, every window from an empty cluster, the run time as the estimate).

The windows are drawn as their code draws them: ``env.seed(1)`` makes a numpy RandomState seeded the way
old gym's ``seeding.np_random`` does (sha512 of the seed, first 8 bytes as little-endian 32-bit words), then
each window starts at ``randint(1024, jobs - 1024 - 1)``. Their loader drops jobs with a run time of 0.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np

from ..workload.jobs import JobTable
from .hooks import ranking
from .machine import Machine
from .metrics import bounded_slowdown
from .rlsched import SelectThenWait

# RLScheduler README, Lublin-1 (average bounded slowdown), quoted in ../shared/workloads/README.md
PUBLISHED = {
    False: {"fcfs": 7273.77, "wfp3": 19753.53, "unicep": 22274.74, "sjf": 277.35, "f1": 258.37},
    True: {"fcfs": 235.82, "wfp3": 133.87, "unicep": 307.23, "sjf": 73.31, "f1": 75.07},
}


def gym_random_state(seed: int) -> np.random.RandomState:
    """The RandomState of old gym's ``seeding.np_random(seed)``."""
    digest = hashlib.sha512(str(seed % 2**64).encode("utf8")).digest()[:8]
    words = struct.unpack("2I", digest)
    big = words[0] + (words[1] << 32)
    ints = []
    while big > 0:
        big, mod = divmod(big, 2**32)
        ints.append(mod)
    rs = np.random.RandomState()
    rs.seed(ints or [0])
    return rs


def window_starts(n_jobs: int, windows: int = 10, length: int = 1024, seed: int = 1) -> list[int]:
    rs = gym_random_state(seed)
    return [int(rs.randint(length, n_jobs - length - 1)) for _ in range(windows)]


def reproduce(machine: Machine, jobs: JobTable, policies: list[str], backfill: bool, windows: int = 10,
              length: int = 1024, seed: int = 1, semantics: str = "rlscheduler") -> dict[str, list[float]]:
    """Average bounded slowdown per window, per policy, under ``semantics`` (rlscheduler or slurm)."""
    from .engine import Engine
    jobs = jobs.take(np.flatnonzero(jobs.run > 0))
    out: dict[str, list[float]] = {}
    for p in policies:
        vals = []
        for start in window_starts(len(jobs), windows, length, seed):
            sub = jobs.take(np.arange(start, start + length))
            if semantics == "rlscheduler":
                o = SelectThenWait(machine, sub, ranking(p), backfill=backfill).run()
            else:
                o = Engine(machine, sub, ranking(p), backfill=backfill, bf_max_job_test=10**9).run()
            vals.append(float(bounded_slowdown(o.begin - sub.submit, sub.run).mean()))
        out[p] = vals
    return out
