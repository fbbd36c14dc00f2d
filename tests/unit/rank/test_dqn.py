"""DQN ranking: features, model file, numpy inference, simulator policy (numpy only)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from slurm_plugin.rank.dqn import (FEATURES, N_BANDS, AgeFloor, DqnModel, DqnRanking, ModelError, job_features,
                                   load_model, save_model)
from slurm_plugin.rank.dqn.features import WEEK_S, scarcity_of
from slurm_plugin.rank.dqn.model import DEFAULT_MODEL
from slurm_plugin.rank.dqn.policy import DELTA
from slurm_plugin.rank.heuristics import QueueView

H = 3600.0


def one(submit=0.0, limit=H, procs=4.0, qos=0.0, now=H, total=64.0):
    return job_features(np.array([submit]), np.array([limit]), np.array([procs]), np.array([qos]), now, total)[0]


@pytest.mark.parametrize("kw, name, want", [
    ({}, "size_frac", 4 / 64),
    ({"procs": 128.0}, "size_frac", 1.0),
    ({}, "log_size", math.log2(5) / math.log2(65)),
    ({"limit": WEEK_S}, "log_limit", 1.0),
    ({"limit": 0.0}, "log_limit", 0.0),
    ({"now": 0.0}, "log_wait", 0.0),
    ({"now": -50.0}, "log_wait", 0.0),  # RLScheduler's mimicked negative waits count as 0
    ({"now": H}, "wait_ratio", math.log1p(1.0) / math.log1p(100.0)),
    ({}, "log_area", math.log10(1 + 4 * H) / math.log10(1 + 64 * WEEK_S)),
    ({}, "limit_pct", 0.0),
    ({}, "backlog", math.log1p(4 * H / 64 / H) / math.log1p(1000.0)),
    ({}, "pressure", 4 / 64 / 4),
    ({"procs": 1000.0}, "pressure", 1.0),
    ({}, "scarcity", 0.0),
    ({"qos": 500.0}, "qos", 1.0),  # scaled by the queue's own maximum without max_qos
    ({}, "qos", 0.0),
])
def test_feature_table(kw, name, want):
    assert one(**kw)[FEATURES.index(name)] == pytest.approx(want, rel=1e-5)


def test_queue_relative_features_and_qos_scale():
    x = job_features(np.zeros(3), np.array([60.0, 600.0, 600.0]), np.array([8.0, 1.0, 2.0]),
                     np.array([0.0, 500.0, 1000.0]), 0.0, 16.0, scarcity=np.array([0.0, 0.5, 2.0]), max_qos=2000.0)
    assert x.shape == (3, 12) and x.dtype == np.float32
    assert x[:, FEATURES.index("limit_pct")].tolist() == [0.0, 0.5, 0.5]  # ties share the lower rank
    assert x[:, FEATURES.index("size_pct")].tolist() == [1.0, 0.0, 0.5]
    assert x[:, FEATURES.index("pressure")] == pytest.approx([11 / 16 / 4] * 3)
    assert x[:, FEATURES.index("scarcity")].tolist() == [0.0, 0.5, 1.0]
    assert x[:, FEATURES.index("qos")] == pytest.approx([0.0, 0.25, 0.5])
    assert job_features(*(np.empty(0),) * 4, 0.0, 16.0).shape == (0, 12)
    assert scarcity_of(np.array([16.0, 4.0, 0.0]), 16.0).tolist() == [0.0, 0.75, 1.0]


def test_model_roundtrip_and_numpy_forward(tmp_path):
    m = DqnModel.init(seed=3)
    m.meta["note"] = "x"
    back = load_model(save_model(m, tmp_path / "m.npz"))
    x = np.random.default_rng(0).random((50, 12), dtype=np.float32)
    np.testing.assert_array_equal(back.q(x), m.q(x))
    h = np.maximum(x @ m.weights[0] + m.biases[0], 0)
    h = np.maximum(h @ m.weights[1] + m.biases[1], 0)
    np.testing.assert_allclose(m.q(x), h @ m.weights[2] + m.biases[2], rtol=1e-6)
    assert back.meta["note"] == "x" and back.meta["features"] == list(FEATURES)
    assert set(m.bands(x).tolist()) <= set(range(N_BANDS))


@pytest.mark.parametrize("mutate, msg", [
    (lambda p: p.unlink(), "no such model file"),
    (lambda p: p.write_bytes(b"garbage, not a zip"), "not a readable model"),
    (lambda p: p.write_bytes(p.read_bytes()[:100]), "not a readable model"),
])
def test_bad_model_files_raise_model_error(tmp_path, mutate, msg):
    p = save_model(DqnModel.init(), tmp_path / "m.npz")
    mutate(p)
    with pytest.raises(ModelError, match=msg):
        load_model(p)


def test_foreign_features_or_shapes_are_refused(tmp_path):
    m = DqnModel.init()
    m.meta["features"] = ["a"] * 12
    with pytest.raises(ModelError, match="trained on features"):
        load_model(save_model(m, tmp_path / "f.npz"))
    m = DqnModel.init()
    m.weights[-1], m.biases[-1] = m.weights[-1][:, :5], m.biases[-1][:5]
    with pytest.raises(ModelError, match="5 outputs"):
        load_model(save_model(m, tmp_path / "s.npz"))


def test_shipped_default_model_loads_and_is_small():
    m = load_model(DEFAULT_MODEL)
    assert DEFAULT_MODEL.stat().st_size < 100_000
    assert m.meta["seed"] == 1 and m.meta["workloads"] and "val_bsld_over_sjf" in m.meta


def _view(now=0.0):
    return QueueView(np.array([0.0, 10.0, 20.0]), np.array([60.0, 6000.0, 600.0]), np.array([1.0, 8.0, 2.0]),
                     np.zeros(3), now)


def test_dqn_ranking_scores_are_bands_shifting_sjf():
    m = DqnModel.init(seed=1)
    r = DqnRanking(m, 16.0)
    v = _view(100.0)
    s = r.scores(v)
    assert r.static is False and r.name == "dqn" and r.needs_able
    np.testing.assert_allclose(s, np.log10(v.limit) + DELTA * m.bands(r.features(v)))


def test_one_band_for_every_job_is_exactly_sjf():
    class OneBand(DqnModel):
        def bands(self, x):
            return np.full(len(x), 3)

    v = _view(100.0)
    s = DqnRanking(OneBand([], []), 16.0).scores(v)
    assert np.argsort(s, kind="stable").tolist() == np.argsort(v.limit, kind="stable").tolist()


def test_scarcity_comes_from_the_views_able_cores():
    v = QueueView(np.zeros(2), np.full(2, 60.0), np.ones(2), np.zeros(2), 0.0, able=np.array([16.0, 4.0]))
    x = DqnRanking(DqnModel.init(), 16.0).features(v)
    assert x[:, FEATURES.index("scarcity")].tolist() == [0.0, 0.75]


def test_age_floor_puts_old_jobs_first_oldest_first():
    class Fixed:
        name, static = "fixed", True

        def scores(self, view):
            return np.array([5.0, 1.0, 3.0])

    floor = AgeFloor(Fixed(), floor_s=3600.0)
    assert floor.name == "fixed+floor1h"
    s = floor.scores(_view(now=3610.0))  # jobs 0 and 1 waited >= 1 h, job 2 waited 3590 s
    assert s[0] == s[1] == -np.inf and s[2] == 3.0
    np.testing.assert_array_equal(floor.scores(_view(now=100.0)), [5.0, 1.0, 3.0])
    assert floor.needs_able is False  # the engine computes able cores only when the inner ranking reads them
    Fixed.needs_able = True
    assert AgeFloor(Fixed(), floor_s=3600.0).needs_able is True


def test_dqn_runs_in_the_simulator_engine():
    from slurm_plugin.sim.engine import Engine
    from slurm_plugin.sim.machine import homogeneous
    from slurm_plugin.workload.jobs import JobTable
    rng = np.random.default_rng(0)
    n = 60
    jobs = JobTable.build(dict(submit=np.sort(rng.integers(0, 3000, n)), run=rng.integers(10, 2000, n),
                               limit=np.full(n, 2000.0), nodes=rng.integers(1, 8, n), cores=np.ones(n)))
    rank = DqnRanking(DqnModel.init(seed=2), 8.0)
    out = Engine(homogeneous(8, 1), jobs, rank).run()
    assert not np.isnan(out.begin).any() and (out.begin >= jobs.submit).all() and rank.calls > 0


def test_margin_and_backlog_gate_keep_jobs_in_band_0():
    # one linear layer: Q_b = b x size_frac, so the greedy band is 7 with an advantage of 7 x size_frac
    w = np.zeros((12, N_BANDS), np.float32)
    w[FEATURES.index("size_frac")] = np.arange(N_BANDS)
    x = np.zeros((3, 12), np.float32)
    x[:, FEATURES.index("size_frac")] = [0.01, 0.5, 1.0]
    x[:, FEATURES.index("backlog")] = [0.9, 0.9, 0.1]
    m = DqnModel([w], [np.zeros(N_BANDS, np.float32)], {})
    assert m.bands(x).tolist() == [7, 7, 7]
    m.meta = {"margin": 1.0}  # advantage 0.07 and 3.5 and 7: only the first stays in band 0
    assert m.bands(x).tolist() == [0, 7, 7]
    m.meta = {"backlog_gate": 0.3}  # the third job's queue holds little work: SJF order (band 0)
    assert m.bands(x).tolist() == [7, 7, 0]
    x[2, FEATURES.index("scarcity")] = 0.5
    m.meta = {"backlog_gate": 0.3, "gate_constrained": True}  # a constrained job keeps its band below the gate
    assert m.bands(x).tolist() == [7, 7, 7]
    x[2, FEATURES.index("scarcity")] = 0.0
    assert m.bands(x).tolist() == [7, 7, 0]


def test_age_floor_scores_rows_as_its_view_and_passes_purity_on():
    """The simulator's call (``scores_rows``) gives what ``scores`` gives for the rows' view, through the inner
    ranking's own ``scores_rows`` (a compiled heuristic's) or without one; ``pure`` is the inner ranking's."""
    from slurm_plugin.rank.heuristics import rows_view
    from slurm_plugin.sim.hooks import RowsScoreRanking, ranking
    rng = np.random.default_rng(5)
    n = 500
    table = QueueView(np.sort(rng.uniform(0, 1e5, n)).round(), rng.choice([60.0, 3600.0, 86400.0], n),
                      rng.integers(1, 64, n).astype(float), np.zeros(n), 0.0, None, rng.integers(1, 8, n))
    for name in ("wfp3", "unicep", "multifactor", "f1", "sjf"):
        inner = ranking(name, None, 64.0)
        assert isinstance(inner, RowsScoreRanking) == (name in ("wfp3", "unicep", "multifactor"))
        floor = AgeFloor(inner, floor_s=7200.0)
        assert floor.pure == getattr(inner, "pure", False)
        rows = np.sort(rng.choice(n, 80, replace=False))
        now = float(table.submit[rows].max()) + 3000.0
        want = floor.scores(rows_view(table, rows, now))
        assert np.isinf(want).any() and not np.isinf(want).all()  # the floor really splits this queue
        assert floor.scores_rows(rows, table, now).view(np.int64).tolist() == want.view(np.int64).tolist()
