"""Identical schedules: every job's start time matches the digest recorded from the engine before its speed work.

Runs the ``fast`` tier of :mod:`.schedule_oracle` (~1 min: trace prefixes, the demo site with idle suspend on and
off, LANL-CM5 FCFS+EASY whole); ``HETSCHED_SIM_ORACLE=full`` runs every case (whole traces, every policy).
"""

import json
import os

import pytest

from .schedule_oracle import GOLDEN, WORKLOADS, cases, run_case

TIER = os.environ.get("HETSCHED_SIM_ORACLE", "fast")
GOLD = json.loads(GOLDEN.read_text())
CASES = cases(TIER)


@pytest.mark.parametrize("case", CASES, ids=[c.key for c in CASES])
def test_schedule_matches_golden(case):
    if case.needs_traces and not WORKLOADS.is_dir():
        pytest.skip(f"shared traces absent ({WORKLOADS})")
    want = GOLD[case.key]
    got, _ = run_case(case)
    assert got == want, (f"{case.key}: the schedule changed (start times differ from the recorded oracle); if this "
                         "is intended, refresh with `python3 -m tests.unit.sim.schedule_oracle --write --only "
                         f"'{case.key}'` and say why in the commit")
