"""Lublin-Feitelson generator: seeded, the model's distribution shapes (sizes, run times, daily cycle), the
loader's ``lublin:`` scheme and its errors."""

import numpy as np
import pytest

from slurm_plugin.workload import WorkloadError, load_workload
from slurm_plugin.workload.lublin import BATCH, WHOLE, LublinSpec, bucket_weights, generate_lublin, runtimes, sizes


@pytest.fixture(scope="module")
def lublin():
    return load_workload("lublin:nodes=256,jobs=20000,seed=3")


def test_seeded_and_deterministic():
    a = generate_lublin(LublinSpec(jobs=500, seed=3)).jobs
    b = generate_lublin(LublinSpec(jobs=500, seed=3)).jobs
    c = generate_lublin(LublinSpec(jobs=500, seed=4)).jobs
    assert np.array_equal(a.submit, b.submit) and np.array_equal(a.nodes, b.nodes) and np.array_equal(a.run, b.run)
    assert not np.array_equal(a.submit, c.submit)


def test_sizes_serial_share_power_of_two_share_and_range(lublin):
    w, n = lublin, lublin.jobs.nodes
    assert w.machine == (256, 1) and n.min() == 1 and n.max() <= 256 and (lublin.jobs.cores == 1).all()
    assert (n == 1).mean() == pytest.approx(WHOLE.serial, abs=0.015)
    par = n[n > 1]
    pow2 = (par & (par - 1)) == 0
    # pow2 is cumulative with serial in the model: P(power of two | parallel) >= pow2 / (1 - serial)
    assert pow2.mean() >= WHOLE.pow2 / (1 - WHOLE.serial) - 0.02
    assert pow2.mean() < 0.95  # and some sizes are not powers of two


def test_two_stage_uniform_median_splits_the_log_sizes():
    rng = np.random.default_rng(0)
    p = BATCH.__class__(**{**BATCH.__dict__, "serial": 0.0, "pow2": 0.0})
    x = np.log2(sizes(p, 50_000, 7.0, rng))
    below = (x <= 7.0 - p.umed_below).mean()
    assert below == pytest.approx(p.uprob, abs=0.02)  # U(ulow, umed) with probability uprob


def test_runtime_is_hyper_gamma_in_log_and_grows_with_size():
    rng = np.random.default_rng(1)
    small = np.log(runtimes(WHOLE, np.ones(50_000, dtype=np.int64), rng))
    big = np.log(runtimes(WHOLE, np.full(50_000, 100), rng))
    p1 = WHOLE.pa * 1 + WHOLE.pb
    want = p1 * WHOLE.a1 * WHOLE.b1 + (1 - p1) * WHOLE.a2 * WHOLE.b2  # the mixture's mean of log(run)
    assert small.mean() == pytest.approx(want, rel=0.03)
    assert big.mean() > small.mean() + 1.0 and big.max() <= 12.0 + 1e-9


def test_daily_cycle_busy_at_midday_quiet_at_night(lublin):
    w = bucket_weights(WHOLE)
    assert w.mean() == pytest.approx(1.0) and w[24:30].mean() > 3 * w[6:12].mean()
    hours = np.bincount(((lublin.jobs.submit % 86400) // 3600).astype(int), minlength=24)
    assert hours[10:16].sum() > 2.5 * hours[1:7].sum()


def test_load_rescales_arrivals_and_overestimate_sets_limits():
    t = load_workload("lublin:nodes=128,jobs=3000,seed=2,load=0.7,overestimate=3").jobs
    span = t.submit[-1] - t.submit[0]
    assert (t.nodes * t.run).sum() / (128 * span) == pytest.approx(0.7, rel=0.01)
    assert (t.limit >= t.run).all() and (t.limit > t.run).mean() > 0.9
    exact = load_workload("lublin:nodes=128,jobs=300,seed=2").jobs
    assert np.array_equal(exact.limit, exact.run)


def test_jitter_changes_the_model_typed_has_two_classes():
    base = generate_lublin(LublinSpec(jobs=4000, seed=5)).jobs
    jit = generate_lublin(LublinSpec(jobs=4000, seed=5, jitter=0.3)).jobs
    assert not np.array_equal(base.run, jit.run)
    typed = generate_lublin(LublinSpec(jobs=2000, seed=5, typed=1)).jobs
    assert typed.class_names == ("interactive", "batch") and set(np.unique(typed.wclass)) == {0, 1}


@pytest.mark.parametrize("spec, what", [("lublin:nodes=1", "nodes"), ("lublin:cores=4", "keys: nodes"),
                                        ("lublin:jitter=0.9", "jitter"), ("lublin:seed=x", "seed")])
def test_bad_specs_name_the_key(spec, what):
    with pytest.raises(WorkloadError, match=what):
        load_workload(spec)
