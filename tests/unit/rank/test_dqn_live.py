"""Live ranker: bands -> SiteFactor actions, age floor, shadow mode, fallback on a missing/corrupt model."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from slurm_plugin.decision import SetSiteFactor
from slurm_plugin.rank.dqn import DqnModel, RankOptions, rank_pending, save_model
from slurm_plugin.rank.dqn.bench import bench_rank, fake_snapshot
from slurm_plugin.rank.dqn.live import LEVELS, level_actions, levels, queue_arrays
from slurm_plugin.site import load_site
from slurm_plugin.snapshot.gres import GresCount
from slurm_plugin.snapshot.model import JobState, NodeState, Snapshot

NOW = 1_000_000.0


class ConstBands(DqnModel):
    """A model whose greedy band is given per job id order (test double for the Q-network)."""

    def __init__(self, bands):
        super().__init__([], [], {})
        self._bands = np.asarray(bands)

    def bands(self, x):
        return self._bands[:len(x)]


def snap(*jobs: JobState) -> Snapshot:
    nodes = (NodeState("x1", "idle", cpus=16, features=("x86_64",)),
             NodeState("g1", "idle", cpus=32, features=("aarch64",), gres=(GresCount("gpu", "h100", 4),)))
    return Snapshot(nodes=nodes, jobs=jobs, taken_at=NOW)


def job(i, wait_h=0.0, state="PENDING", **kw):
    return JobState(i, state, cpus=kw.pop("cpus", 1), time_limit_min=kw.pop("limit", 60),
                    submit_time=int(NOW - wait_h * 3600), **kw)


SPAN = LEVELS * 100  # SiteFactor of one policy band unit (default level step 100)


def test_levels_follow_the_learned_score():
    # one band = DELTA decades: a 1 h job in band 0 is level 25; band 4 moves it one decade (4 levels) later;
    # a 6 min job in band 4 ties the 1 h job in band 0; limits are clipped to the level range
    lv = levels(np.array([3600.0, 3600.0, 360.0, 1.0, 1e12]), np.array([0, 4, 4, 0, 7]))
    assert lv.tolist() == [25, 21, 25, LEVELS - 1, 0]


@pytest.mark.parametrize("level, policy, waits_h, want", [
    ([25, 21, 30], [0, 0, 0], [0, 0, 0], [(3000, (3,)), (2500, (1,)), (2100, (2,))]),
    ([7, 7, 7], [0, 0, 0], [0, 0, 0], [(700, (1, 2, 3))]),  # one action (one scontrol) per value
    # the policy (class/tier) band dominates the level: a gold-tier job with level 0 beats every bronze one
    ([0, 39, 10], [1000, 0, 510], [0, 0, 0], [(1000 * SPAN, (1,)), (510 * SPAN + 1000, (3,)), (3900, (2,))]),
    # age floor: above every policy band (top 1030), oldest first
    ([5, 5, 39], [0, 1000, 0], [30, 24, 1], [(1031 * SPAN + 30, (1,)), (1031 * SPAN + 24, (2,)), (3900, (3,))]),
])
def test_level_actions(level, policy, waits_h, want):
    got = level_actions(np.array([1, 2, 3]), np.array(level), np.array(policy), np.array(waits_h) * 3600.0, 1030,
                        RankOptions())
    assert [(a.site_factor, a.job_ids) for a in got] == want
    assert all(isinstance(a, SetSiteFactor) and a.reason for a in got)


def test_floor_reason_and_step_options():
    [a] = level_actions(np.array([9]), np.array([6]), np.zeros(1), np.array([7200.0]), 0,
                        RankOptions(age_floor_s=3600, band_step=10))
    assert a.site_factor == LEVELS * 10 + 2 and a.reason.startswith("age floor")


def test_rank_pending_only_touches_pending_jobs():
    s = snap(job(1), job(2, state="RUNNING"), job(3, wait_h=2))
    d = rank_pending(s, ConstBands([1, 6]))
    assert d.source == "rank:dqn"
    assert sorted(i for a in d.actions for i in a.job_ids) == [1, 3]
    assert {a.site_factor for a in d.actions} == {int(v) * 100 for v in levels(np.full(2, 3600.0), np.array([1, 6]))}


def test_admission_band_and_dqn_compose_in_one_value():
    """Admission set tier/class at submit (qos, comment tags); the cycle's value keeps that order on top and
    the model's order inside it: the short job of the silver tier still ranks below every gold job."""
    site = load_site("demo")
    gold = job(1, limit=1440, qos="gold", user_id=0)
    silver_short = job(2, limit=1, comment="hetsched:class=web,tier=silver", user_id=0)
    silver_long = job(3, limit=1440, comment="hetsched:class=web,tier=silver", user_id=0)
    d = rank_pending(snap(gold, silver_short, silver_long), ConstBands([0, 0, 0]), site)
    got = {j: a.site_factor for a in d.actions for j in a.job_ids}
    assert got[1] > got[2] > got[3]
    assert got[2] // SPAN == got[3] // SPAN == 510 and got[1] // SPAN >= 1000  # classify()'s bands, kept


def test_a_user_edited_comment_or_qos_never_raises_the_band():
    """A user (uid 65534, no grant, no accounting) who writes class=ai-training,tier=gold into the comment (as
    `scontrol update comment=` allows after submission) or names --qos=gold stays in the default band 0."""
    site = load_site("demo")
    forged = job(1, comment="hetsched:class=ai-training,tier=gold", user_id=65534)
    qos = job(2, qos="gold", wckey="ai-training", account="ai-training", user_id=65534)
    root = job(3, comment="class=ai-training", user_id=0)
    d = rank_pending(snap(forged, qos, root), ConstBands([0, 0, 0]), site)
    got = {j: a.site_factor // SPAN for a in d.actions for j in a.job_ids}
    assert got == {1: 0, 2: 0, 3: 1030}


def test_queue_arrays_limits_qos_and_able_cores():
    s = snap(job(1, cpus=4, limit=0, features="aarch64"), job(2, gres=(GresCount("gpu", "h100", 1),), qos="gold"),
             job(3, features="riscv64"), job(4, features="x86_64|aarch64"))
    q = queue_arrays(s)
    assert q["limit"].tolist()[0] == 86400.0 and q["limit"][1] == 3600.0
    assert q["able"].tolist() == [32.0, 32.0, 0.0, 48.0]
    assert q["procs"].tolist() == [4.0, 1.0, 1.0, 1.0]


def test_shadow_mode_logs_and_changes_nothing(caplog):
    caplog.set_level(logging.INFO, logger="slurm_plugin.rank.dqn.live")
    d = rank_pending(snap(job(1), job(2)), ConstBands([0, 4]), options=RankOptions(shadow=True))
    assert d.actions == () and d.source == "rank:dqn:shadow"
    assert f"would set sitefactor={levels(np.array([3600.0]), np.array([0]))[0] * 100} on 1 job(s)" in caplog.text


@pytest.mark.parametrize("setup", ["missing", "corrupt", "none"])
def test_bad_model_falls_back_to_plain_multifactor(tmp_path, caplog, setup):
    path = tmp_path / "m.npz"
    if setup == "corrupt":
        save_model(DqnModel.init(), path)
        path.write_bytes(path.read_bytes()[:64])
    model = None if setup == "none" else path
    with caplog.at_level(logging.WARNING, logger="slurm_plugin.rank.dqn.live"):
        d = rank_pending(snap(job(1)), model)
    assert d.actions == () and d.source == "rank:fallback-multifactor"
    lines = [r for r in caplog.records if "falling back to plain multifactor" in r.getMessage()]
    assert len(lines) == 1 and (setup == "none" or str(path) in lines[0].getMessage())


def test_real_model_file_ranks_every_pending_job(tmp_path):
    path = save_model(DqnModel.init(seed=5), tmp_path / "m.npz")
    s = fake_snapshot(300)
    d = rank_pending(s, path)
    ids = sorted(i for a in d.actions for i in a.job_ids)
    assert ids == list(range(1, 301))
    floor = [a for a in d.actions if a.site_factor >= SPAN]  # no site: policy band 0, floor at 1 x SPAN
    waits = {j.job_id: s.taken_at - j.submit_time for j in s.jobs}
    assert all(waits[i] >= 86400 for a in floor for i in a.job_ids)
    assert all(waits[i] < 86400 for a in d.actions if a.site_factor < SPAN for i in a.job_ids)


def test_bench_reports_the_result_keys(tmp_path):
    path = save_model(DqnModel.init(), tmp_path / "m.npz")
    out = bench_rank(2000, 2, path)
    assert out["jobs"] == 2000 and out["rank_ms"] > 0 and out["actions"] >= 1
