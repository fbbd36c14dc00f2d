"""The job queue as the cycle reads and acts on it, on the real cluster: held jobs left alone, a pending job
array kept as one record and addressed as Slurm accepts it, and the compact queue reader."""

from __future__ import annotations

import time

import pytest

from slurm_plugin.cycle import CycleConfig
from slurm_plugin.cycle.policy import live_ranker
from slurm_plugin.cycle.runner import CycleRunner
from slurm_plugin.decision import SetSiteFactor
from slurm_plugin.policy.spec import RankingSpec
from slurm_plugin.snapshot import collect_snapshot
from tests.system.conftest import Needs, cluster_fixture

pytestmark = pytest.mark.system
RANK_ONLY = CycleConfig(pack=False, reshape=False, power=False, wipe=False)

c = cluster_fixture("queue", Needs())


@pytest.fixture(scope="module")
def blocked(c):
    """The RISC-V node filled by a blocker, so 1-core jobs for it pend (reason Resources/Priority)."""
    s = c.client()
    blocker = s.sbatch("-p", "riscv", "-n", "64", "--time=10", "--output=/dev/null", wrap="sleep 600")
    s.wait_job(blocker, until=("RUNNING",), timeout=90)
    yield s
    s.cancel(blocker)


def _pending(s, *args: str) -> int:
    return s.sbatch("-p", "riscv", "-n", "1", "--time=30", "--output=/dev/null", *args, wrap="true")


def _wait(what, check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not (got := check()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert got, f"{what} within {timeout:.0f} s"
    return got


def _cycle(c, tmp_path) -> list:
    runner = CycleRunner(c.site(), c.client(), RANK_ONLY, tmp_path, ranker=live_ranker(RankingSpec(name="sjf")))
    decision, results = runner.run_once()
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    return [a for a in decision.actions if isinstance(a, SetSiteFactor)]


@pytest.mark.parametrize("hold", ["hold", "uhold"])
def test_a_held_job_is_neither_ranked_nor_released(c, blocked, tmp_path, hold):
    """``scontrol hold`` (admin) and ``uhold`` (user): the cycle ranks the other pending job and leaves the held
    one alone: still held after the cycle, and once its owner releases it, no SiteFactor of the suite's."""
    s = blocked
    free, held = _pending(s), _pending(s)
    try:
        s.run("scontrol", hold, str(held))
        snap = _wait("the hold in the snapshot", lambda: collect_snapshot(s))
        by_id = {j.job_id: j for j in snap.jobs}
        assert by_id[held].held and not by_id[free].held, (by_id[held], by_id[free])
        set_on = {j for a in _cycle(c, tmp_path) for j in a.job_ids}
        assert free in set_on and held not in set_on
        job = s.show_job(held)
        assert (job["Priority"], job["Reason"]) == ("0", "JobHeldUser" if hold == "uhold" else "JobHeldAdmin")
        s.run("scontrol", "release", str(held))
        factors = _wait("both jobs in sprio", lambda: (f := s.site_factors(free, held)) and len(f) == 2 and f)
        assert factors[held] == 0 and factors[free] != 0, factors
    finally:
        s.cancel(free, held)
