"""The DQN ranking live: pending jobs of a real local Slurm cluster get their priority from the model.

One cycle = collect a snapshot through the real Slurm commands, ``rank_pending`` (numpy model), apply with the
SlurmApplier; the bands must then show in ``sprio -o "%i %S"`` (SITE column) and order ``squeue``'s priority.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest

from slurm_plugin.decision import Journal, SlurmApplier
from slurm_plugin.rank.dqn import DqnModel, RankOptions, load_model, rank_pending, save_model
from slurm_plugin.rank.dqn.features import FEATURES
from slurm_plugin.admission.classify import top_band
from slurm_plugin.rank.dqn.live import LEVELS
from slurm_plugin.rank.dqn.model import DEFAULT_MODEL, N_BANDS
from slurm_plugin.snapshot.collect import collect_snapshot
from tests.system.conftest import Needs, cluster_fixture

pytestmark = pytest.mark.system
LIMITS_MIN = (1, 30, 240, 1440)  # pending jobs' time limits, shortest first


c = cluster_fixture("rank", Needs())


@pytest.fixture(scope="module")
def queue(c):
    """The RISC-V node filled by a blocker; four 1-core jobs with different time limits pend behind it."""
    s = c.client()
    blocker = s.sbatch("-p", "riscv", "-n", "64", "--time=10", "--output=/dev/null", wrap="sleep 300")
    s.wait_job(blocker, until=("RUNNING",), timeout=60)
    jobs = [s.sbatch("-p", "riscv", "-n", "1", f"--time={m}", "--output=/dev/null", wrap="true") for m in LIMITS_MIN]
    time.sleep(1)
    yield jobs
    s.cancel(blocker, *jobs)


def limit_model() -> DqnModel:
    """One linear layer whose greedy band grows with the time limit (Q_b = 7 b log_limit - b^2 / 2, so the
    band is the nearest integer to 7 log_limit): short jobs first, a model with a known answer."""
    w = np.zeros((len(FEATURES), N_BANDS), np.float32)
    b = np.arange(N_BANDS, dtype=np.float32)
    w[FEATURES.index("log_limit")] = 7 * b
    return DqnModel([w], [-b * b / 2], {})


def site_column(c, jobs) -> dict[int, int]:
    return c.client().site_factors(*jobs)


def priorities(c, jobs) -> dict[int, int]:
    return {j: int(c.client().show_job(j)["Priority"]) for j in jobs}


def cycle(c, model, tmp_path, **opts):
    snap = collect_snapshot(c.client())
    decision = rank_pending(snap, model, c.site(), options=RankOptions(**opts))
    results = SlurmApplier(c.client(), Journal(tmp_path / "journal.jsonl")).apply(decision)
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    return decision


def test_model_bands_become_sitefactor_and_order_the_queue(c, queue, tmp_path):
    model = limit_model()
    decision = cycle(c, model, tmp_path)
    want = {j: a.site_factor for a in decision.actions for j in a.job_ids}
    assert set(queue) <= set(want)
    assert site_column(c, queue) == {j: want[j] for j in queue}
    # the known model: shorter limit -> lower score -> higher level -> higher SiteFactor -> higher Slurm priority
    factors = [want[j] for j in queue]
    assert factors == sorted(factors, reverse=True) and factors[0] > factors[-1]
    prio = priorities(c, queue)
    assert [prio[j] for j in queue] == sorted(prio.values(), reverse=True)


def test_shipped_model_sets_the_bands_it_computes(c, queue, tmp_path):
    decision = cycle(c, load_model(DEFAULT_MODEL), tmp_path)
    want = {j: a.site_factor for a in decision.actions for j in a.job_ids}
    assert site_column(c, queue) == {j: want[j] for j in queue}
    floor = (top_band(c.site()) + 1) * LEVELS * RankOptions().band_step
    assert all(0 <= want[j] < floor for j in queue)


def test_age_floor_lifts_every_waiting_job_above_the_bands(c, queue, tmp_path):
    cycle(c, limit_model(), tmp_path, age_floor_s=1.0)
    got = site_column(c, queue)
    assert all(v >= (top_band(c.site()) + 1) * LEVELS * RankOptions().band_step for v in got.values()), got


def test_shadow_mode_changes_nothing(c, queue, tmp_path, caplog):
    cycle(c, limit_model(), tmp_path)
    before = site_column(c, queue)
    caplog.set_level(logging.INFO, logger="slurm_plugin.rank.dqn.live")
    decision = cycle(c, limit_model(), tmp_path, age_floor_s=1.0, shadow=True)
    assert decision.actions == () and "would set sitefactor" in caplog.text
    assert site_column(c, queue) == before


def test_corrupt_model_falls_back_without_touching_slurm(c, queue, tmp_path, caplog):
    cycle(c, limit_model(), tmp_path)
    before = site_column(c, queue)
    bad = save_model(DqnModel.init(), tmp_path / "m.npz")
    bad.write_bytes(b"\x00" * 100)
    with caplog.at_level(logging.WARNING, logger="slurm_plugin.rank.dqn.live"):
        decision = cycle(c, bad, tmp_path)
    assert decision.actions == () and "falling back to plain multifactor" in caplog.text
    assert site_column(c, queue) == before


def test_admission_tier_stays_on_top_of_the_models_order(c, queue, tmp_path):
    """One composition of SiteFactor: the class/tier band admission gives (here from the comment tag it writes)
    dominates, the model orders inside it: a day-long web (silver) job ranks above a 1-minute batch (bronze)
    job, though the model alone puts the short job first."""
    s = c.client()
    web = s.sbatch("-p", "riscv", "-n", "1", "--time=1440", "--comment=hetsched:class=web,tier=silver",
                   "--output=/dev/null", wrap="true")
    batch = s.sbatch("-p", "riscv", "-n", "1", "--time=1", "--output=/dev/null", wrap="true")
    try:
        time.sleep(1)
        decision = cycle(c, limit_model(), tmp_path)
        want = {j: a.site_factor for a in decision.actions for j in a.job_ids}
        got = site_column(c, [web, batch, *queue])
        assert got == {j: want[j] for j in got}
        span = LEVELS * RankOptions().band_step
        assert got[web] // span == 510 and got[batch] // span == 0  # classify(): silver 500 + web class 10
        assert got[web] > got[batch]
        assert got[batch] > got[queue[-1]]  # inside the bronze tier the model's order: 1 min before 1 day
        prio = priorities(c, [web, batch])
        assert prio[web] > prio[batch]
    finally:
        s.cancel(web, batch)
