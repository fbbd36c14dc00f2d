"""Live ranker: bands -> SiteFactor actions, age floor, shadow mode, fallback on a missing/corrupt model."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from slurm_plugin.decision import SetSiteFactor
from slurm_plugin.rank.dqn import DqnModel, RankOptions, rank_pending, save_model
from slurm_plugin.rank.dqn.bench import bench_rank, fake_snapshot
from slurm_plugin.rank.dqn.live import band_actions, queue_arrays
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


@pytest.mark.parametrize("bands, waits_h, want", [
    ([0, 7, 3], [0, 0, 0], [(7000, (1,)), (4000, (3,)), (0, (2,))]),
    ([2, 2, 2], [0, 0, 0], [(5000, (1, 2, 3))]),                      # one action (one scontrol) per band
    ([5, 5, 0], [30, 24, 1], [(8030, (1,)), (8024, (2,)), (7000, (3,))]),  # floor: above band 0, oldest first
])
def test_band_actions(bands, waits_h, want):
    got = band_actions(np.array([1, 2, 3]), np.array(bands), np.array(waits_h) * 3600.0, RankOptions())
    assert [(a.site_factor, a.job_ids) for a in got] == want
    assert all(isinstance(a, SetSiteFactor) and a.reason for a in got)


def test_floor_reason_and_step_options():
    [a] = band_actions(np.array([9]), np.array([6]), np.array([7200.0]), RankOptions(age_floor_s=3600, band_step=10))
    assert a.site_factor == 80 + 2 and a.reason.startswith("age floor")


def test_rank_pending_only_touches_pending_jobs():
    s = snap(job(1), job(2, state="RUNNING"), job(3, wait_h=2))
    d = rank_pending(s, ConstBands([1, 6]))
    assert d.source == "rank:dqn"
    assert sorted(i for a in d.actions for i in a.job_ids) == [1, 3]
    assert {a.site_factor for a in d.actions} == {6000, 1000}


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
    assert "would set sitefactor=7000 on 1 job(s)" in caplog.text


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
    floor = [a for a in d.actions if a.site_factor >= 8000]
    waits = {j.job_id: s.taken_at - j.submit_time for j in s.jobs}
    assert all(waits[i] >= 86400 for a in floor for i in a.job_ids)
    assert all(waits[i] < 86400 for a in d.actions if a.site_factor < 8000 for i in a.job_ids)


def test_bench_reports_the_result_keys(tmp_path):
    path = save_model(DqnModel.init(), tmp_path / "m.npz")
    out = bench_rank(2000, 2, path)
    assert out["jobs"] == 2000 and out["rank_ms"] > 0 and out["actions"] >= 1
