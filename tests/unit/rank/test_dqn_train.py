"""Training side (torch, the ``train`` extra): numpy inference equals torch's, a tiny run repeats exactly,
and episodes become per-job transitions with the documented reward."""

from __future__ import annotations

import numpy as np
import pytest

from slurm_plugin.training.episodes import Recorder, Source, play, transitions
from slurm_plugin.rank.dqn.model import DqnModel
from slurm_plugin.sim.machine import homogeneous
from slurm_plugin.workload.jobs import JobTable


def _jobs(n=400, seed=0) -> JobTable:
    rng = np.random.default_rng(seed)
    run = rng.integers(10, 3000, n).astype(float)
    return JobTable.build(dict(submit=np.sort(rng.integers(0, 40 * n, n)).astype(float), run=run,
                               limit=run * 2, nodes=rng.integers(1, 8, n), cores=np.ones(n)))


def test_transitions_reward_and_terminals():
    jobs = _jobs(40).take(np.arange(40))
    jobs.submit = np.round(jobs.submit - jobs.submit[0])
    rec = Recorder(DqnModel.init(seed=1), 8.0, epsilon=0.5, rng=np.random.default_rng(0))
    out = play(homogeneous(8, 1), jobs, rec)
    s, a, r, s2, d = transitions(rec, jobs.run, jobs.procs / 8.0, price=1.0)
    assert len(s) == len(a) == len(r) == len(s2) == len(d) == sum(len(e[1]) for e in rec.log)
    assert (r <= 0).all() and (r >= -10).all()
    # every job's last transition is terminal, and a job that never waited has reward 0
    assert d.sum() >= len(jobs) - 1
    assert (r[d == 1] == 0).all()
    assert not np.isnan(out.begin).any()


def test_numpy_inference_equals_torch_on_the_same_weights():
    torch = pytest.importorskip("torch", reason="torch is the 'train' extra, not installed")
    from slurm_plugin.training.train import _net, to_numpy
    torch.manual_seed(0)
    net = _net(torch, (32, 32))
    x = np.random.default_rng(1).random((500, 12), dtype=np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(to_numpy(net).q(x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(to_numpy(net).bands(x), want.argmax(1))


def test_tiny_training_run_is_seeded_and_reproducible():
    pytest.importorskip("torch", reason="torch is the 'train' extra, not installed")
    from slurm_plugin.training.train import TrainConfig, train
    src = [Source("t", homogeneous(8, 1), _jobs())]
    cfg = TrainConfig(episodes=4, seq_len=32, batch=32, updates=5, eval_every=2, val_seqs=2, target_every=3,
                      warm_episodes=2, warm_steps=20)
    m1, h1 = train(src, cfg)
    m2, h2 = train(src, cfg)
    for w1, w2 in zip(m1.weights + m1.biases, m2.weights + m2.biases):
        np.testing.assert_array_equal(w1, w2)
    assert [h["val_bsld_over_sjf"] for h in h1["history"]] == [h["val_bsld_over_sjf"] for h in h2["history"]]
    m3, _ = train(src, TrainConfig(**{**cfg.__dict__, "seed": 2}))
    assert any(not np.array_equal(a, b) for a, b in zip(m1.weights, m3.weights))


def test_teacher_offsets_big_jobs_only_under_backlog():
    from slurm_plugin.rank.dqn.features import job_features, FEATURES
    from slurm_plugin.training.train import Teacher
    procs = np.array([1.0, 10.0, 100.0, 256.0])
    x = job_features(np.zeros(4), np.full(4, 3600.0), procs, np.zeros(4), 0.0, 256.0)
    t = Teacher(0.5, 256.0, backlog=0.0)
    assert t.bands(x).tolist() == [0, 2, 4, 5]  # rint(0.5 log10 n / 0.25)
    x[:, FEATURES.index("backlog")] = 0.0
    assert t.bands(x).tolist() == [0, 0, 0, 0]  # no backlog: plain SJF


def test_teacher_low_puts_big_constrained_jobs_first_on_a_light_queue():
    from slurm_plugin.rank.dqn.features import job_features, FEATURES
    from slurm_plugin.training.train import Teacher
    procs = np.array([1.0, 10.0, 256.0, 1.0])
    scarce = np.array([0.5, 0.5, 0.5, 0.0])  # the last job runs anywhere
    x = job_features(np.zeros(4), np.full(4, 3600.0), procs, np.zeros(4), 0.0, 256.0, scarce)
    x[:, FEATURES.index("backlog")] = 0.0
    t = Teacher(0.5, 256.0, backlog=0.3, low=0.25)
    assert t.bands(x).tolist() == [2, 1, 0, 0]  # rint(0.25 log10(256 / n) / 0.25) for constrained jobs only
    x[:, FEATURES.index("backlog")] = 1.0
    assert t.bands(x).tolist() == [0, 2, 5, 0]  # under load: the size offset for every job


def test_price_grows_with_the_jobs_share_of_the_machine():
    rec = Recorder(DqnModel.init(), 8.0, epsilon=0.0, rng=np.random.default_rng(0))
    x = np.zeros((2, 12), np.float32)
    rec.log[:] = [(0.0, np.array([0, 1]), x, np.array([0, 0])), (3600.0, np.array([0, 1]), x, np.array([0, 0]))]
    _, _, r, _, _ = transitions(rec, np.array([3600.0, 3600.0]), np.array([0.125, 1.0]), price=1.0)
    # 1 h waited: bsld +1 each, plus price 1 x 7 levels x share; / 10
    assert r[:2].tolist() == pytest.approx([-(1 + 7 * 0.125) / 10, -(1 + 7) / 10])


def test_load_weights_is_the_inverse_of_to_numpy():
    torch = pytest.importorskip("torch", reason="torch is the 'train' extra, not installed")
    from slurm_plugin.training.train import _net, load_weights, to_numpy
    model = DqnModel.init(seed=4)
    net = _net(torch, (32, 32))
    load_weights(torch, net, model)
    for a, b in zip(to_numpy(net).weights + to_numpy(net).biases, model.weights + model.biases):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="do not match"):
        load_weights(torch, _net(torch, (16,)), model)


def test_tune_suffix_keeps_only_the_first_70_percent():
    from slurm_plugin.cli.rank import _sources
    [whole, tune] = _sources(("lublin:nodes=16,jobs=200,seed=1", "lublin:nodes=16,jobs=200,seed=1@tune"), None)
    assert len(whole.jobs) == 200 and tune.name.endswith("@tune") and 130 <= len(tune.jobs) <= 150
    np.testing.assert_array_equal(tune.jobs.submit, whole.jobs.submit[:len(tune.jobs)])
