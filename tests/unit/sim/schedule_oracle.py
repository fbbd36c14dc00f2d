"""Regression oracle of the simulator: a digest of every job's start time per (workload, policy, backfill, power).

The golden digests in ``golden/schedules.json`` were recorded from the engine before its speed work (issue 14);
any engine change must reproduce them exactly (same start time for every job, bit for bit). Refresh only when a
change is *meant* to move schedules, and say so in the commit:

    PYTHONPATH=$PWD python3 -m tests.unit.sim.schedule_oracle --write [--tier fast|full] [--only SUBSTRING]

Tiers: ``fast`` (prefixes of the shared traces, a small synthetic heterogeneous site with power management on
and off, and LANL-CM5 FCFS+EASY whole: what ``tests/unit/sim/test_schedule_oracle.py`` runs) and ``full``
(every shared trace whole, every policy, backfill on and off; ``HETSCHED_SIM_ORACLE=full`` runs it as a test).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
WORKLOADS = ROOT.parent / "shared" / "workloads"
GOLDEN = Path(__file__).resolve().parent / "golden" / "schedules.json"
POLICIES = ("fcfs", "sjf", "wfp3", "unicep", "f1", "multifactor", "dqn")
SWF = {"lublin": "swf/lublin_256.swf", "kth": "swf/KTH-SP2-1996-2.1-cln.swf.gz",
       "lanl": "swf/LANL-CM5-1994-4.1-cln.swf.gz"}


@dataclass(frozen=True)
class Case:
    """One simulation: ``workload`` is a key of :data:`SWF` or a ``synthetic:...`` spec (then on ``site``);
    ``first`` keeps only the first that many jobs (0 = all)."""

    workload: str
    policy: str
    backfill: bool
    power: str = "always-on"
    site: str | None = None
    first: int = 0

    @property
    def key(self) -> str:
        w = self.workload if self.site is None else f"{self.site}/{self.workload}"
        return (f"{w}{'[:%d]' % self.first if self.first else ''} {self.policy} "
                f"bf={'on' if self.backfill else 'off'} power={self.power}")

    @property
    def needs_traces(self) -> bool:
        return self.workload in SWF


def _matrix(workload: str, first: int = 0, site: str | None = None, powers=("always-on",),
            policies=POLICIES) -> list[Case]:
    return [Case(workload, pol, bf, pw, site, first) for pw in powers for bf in (False, True) for pol in policies]


# the tuner's paths (hetsched tune): its weighted family with the age floor and the power candidates it replays,
# as policy-file sections (``policy`` / ``power`` keys below name them)
RANKING_SPECS = {"weighted(size=0.5,age=1)+floor": dict(name="weighted", w_size=0.5, w_age=1.0, age_floor=True),
                 "sjf+floor": dict(name="sjf", age_floor=True)}
SCALING_SPECS = {"planner(1000W)": dict(name="planner", wait_price_w=1000.0, arch=False, pid=False),
                 "planner+arch(10000W)": dict(name="planner", wait_price_w=10000.0, arch=True, pid=False),
                 "demand-timer(900,60)": dict(name="planner", wait_price_w=None, grace_s=900.0, quiet_grace_s=60.0)}
TUNER = "synthetic:jobs=2000,seed=1"  # on site_configs/large.yaml


def _tuner_cases() -> list[Case]:
    return ([Case(TUNER, pol, True, "always-on", "large") for pol in ("fcfs", "wfp3", *RANKING_SPECS)]
            + [Case(TUNER, "fcfs", True, pw, "large") for pw in ("idle-suspend", *SCALING_SPECS)])


def cases(tier: str) -> list[Case]:
    fast = (_matrix("lublin", first=3000) + _matrix("kth", first=1500, policies=("fcfs", "sjf", "multifactor"))
            + _matrix("synthetic:jobs=1200,seed=3", site="demo", powers=("always-on", "idle-suspend"))
            + [Case("lanl", "fcfs", True)] + _tuner_cases())
    if tier == "fast":
        return fast
    full = (_matrix("lublin") + _matrix("kth") + _matrix("lanl")
            + _matrix("synthetic:jobs=4000,seed=1", site="demo", powers=("always-on", "idle-suspend"))
            + [Case("synthetic:jobs=100000,seed=1", "fcfs", True, pw, "large") for pw in ("always-on", "idle-suspend")])
    return fast + [c for c in full if c not in fast]


_PREPARED: dict = {}


def prepared(case: Case):
    from slurm_plugin.sim.run import prepare
    key = (case.workload, case.site)
    if key not in _PREPARED:
        _PREPARED.clear()  # one workload at a time (cases are grouped by workload)
        spec = str(WORKLOADS / SWF[case.workload]) if case.workload in SWF else case.workload
        _PREPARED[key] = prepare(spec, case.site)
    p = _PREPARED[key]
    if case.first:
        from dataclasses import replace
        p = replace(p, workload=replace(p.workload, jobs=p.workload.jobs.take(np.arange(case.first))))
    return p


def digest(begin: np.ndarray) -> dict:
    """sha256 of the start times (float64, NaN = never started -> -1) plus a few values to read in a diff."""
    b = np.where(np.isnan(begin), -1.0, begin).astype("<f8")
    n = len(b)
    spots = sorted({0, n // 3, n // 2, (2 * n) // 3, n - 1}) if n else []
    return {"sha256": hashlib.sha256(b.tobytes()).hexdigest(), "jobs": n, "unstarted": int(np.isnan(begin).sum()),
            "sum_begin": float(np.nansum(begin)), "spot": {str(i): float(b[i]) for i in spots}}


def run_case(case: Case) -> tuple[dict, float]:
    """The digest of one case and the simulation's wall time."""
    import os

    from slurm_plugin.rank.dqn.policy import MODEL_ENV
    from slurm_plugin.sim.run import simulate
    from slurm_plugin.policy import RankingSpec, ScalingSpec
    from slurm_plugin.sim.policy import sim_ranking, sim_scaling
    p = prepared(case)
    policy, power = case.policy, case.power
    if policy in RANKING_SPECS:
        policy = sim_ranking(RankingSpec(**RANKING_SPECS[policy]), p.site, float(p.machine.cores))
    if power in SCALING_SPECS:
        power = sim_scaling(ScalingSpec(**SCALING_SPECS[power]), p.machine, p.workload.jobs)
    saved = os.environ.pop(MODEL_ENV, None)  # the shipped model (`sim run --model` sets this in its process)
    try:
        row, out = simulate(p, policy, backfill=case.backfill, power=power)
    finally:
        if saved is not None:
            os.environ[MODEL_ENV] = saved
    return digest(out.begin), row["sim_wall_s"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="record the digests into the golden file")
    ap.add_argument("--tier", choices=("fast", "full"), default="full")
    ap.add_argument("--only", default="", help="only cases whose key contains this")
    a = ap.parse_args(argv)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    bad = 0
    for case in cases(a.tier):
        if a.only not in case.key:
            continue
        got, wall = run_case(case)
        want = golden.get(case.key)
        status = "new" if want is None else ("ok" if want["sha256"] == got["sha256"] else "DIFFERS")
        bad += status == "DIFFERS"
        print(f"{status:8s} {wall:7.2f}s {case.key}", flush=True)
        if a.write:
            golden[case.key] = got
            GOLDEN.parent.mkdir(parents=True, exist_ok=True)
            GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    t0 = time.perf_counter()
    rc = main()
    print(f"{time.perf_counter() - t0:.1f}s", file=sys.stderr)
    sys.exit(rc)
