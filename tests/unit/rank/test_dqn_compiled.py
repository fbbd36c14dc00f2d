"""The compiled DQN scorer (:mod:`slurm_plugin.rank.dqn.compiled`) against the numpy code it replaces.

* features: bit for bit equal to :class:`TableFeatures` on random tables (QoS given, from the queue, none);
* Q-values: equal to numpy's within float32 rounding; bands and scores equal wherever numpy's best band leads by
  more than that rounding (random weights, random queues of 1 to 400 jobs);
* every queue the simulator scores on the shipped model's runs (a shared trace, the synthetic heterogeneous site):
  the same scores, number for number, and the same schedule as with ``HETSCHED_DQN_COMPILED=0``;
* the fallbacks: the switch off, ``compiled=False``, a model shape the kernel does not run.
numba is a dependency: these tests fail, not skip, without it.
"""

from pathlib import Path

import numpy as np
import pytest

from slurm_plugin.rank import compiled as loader
from slurm_plugin.rank.dqn import compiled
from slurm_plugin.rank.dqn import features as feats_module
from slurm_plugin.rank.dqn import policy as P
from slurm_plugin.rank.dqn._kernels import dense
from slurm_plugin.rank.dqn.features import _AREA, _PROCS, TableFeatures, _backlog
from slurm_plugin.rank.dqn.model import DEFAULT_MODEL, DqnModel, load_model
from slurm_plugin.rank.dqn.policy import DELTA, DqnRanking, _log_limit

SWF = Path(__file__).resolve().parents[4] / "shared" / "workloads" / "swf"
UNGATED, ORDER, SCORES_ROWS = DqnRanking._ungated_scores, DqnRanking._ungated_order, DqnRanking.scores_rows


def _table(rng, n, qos_kind, scarce):
    submit = np.sort(rng.uniform(0, 1e6, n)).round()
    limit = rng.choice([0.0, 30.0, 600.0, 3600.0, 86400.0, 4e5], n) * rng.uniform(0.5, 2.0, n)
    procs = rng.integers(1, 300, n).astype(float)
    qos = rng.choice([0.0, 10.0, 100.0], n) if qos_kind != "none" else np.zeros(n)
    max_qos = 200.0 if qos_kind == "given" else None
    scarcity = rng.uniform(0, 1, n) if scarce else None
    return TableFeatures(submit, limit, procs, qos, 512.0, scarcity, max_qos), _log_limit(limit)


@pytest.mark.parametrize("qos_kind", ["given", "queue", "none"])
def test_features_and_bands_equal_numpy_on_random_queues(qos_kind):
    rng = np.random.default_rng({"given": 1, "queue": 2, "none": 3}[qos_kind])
    feats, log_limit = _table(rng, 3000, qos_kind, scarce=qos_kind == "given")
    assert feats.qos_zero == (qos_kind == "none")
    checked = total = 0
    for seed in range(6):
        model = DqnModel.init(hidden=(32, 32), seed=seed)
        score = compiled.scorer(feats, log_limit, model, DELTA)
        assert score is not None, "numba is installed (a dependency): the compiled scorer must load here"
        for n in (1, 2, 7, 40, 400):
            rows = np.sort(rng.choice(3000, n, replace=False)).astype(np.int64)
            now = float(feats.submit[rows].max()) + float(rng.uniform(0, 5e5))
            procs_sum, area_sum = feats.packed[_PROCS:_AREA + 1, rows].sum(axis=1).tolist()
            x = feats(rows, now, (procs_sum, area_sum))
            q = model.q(x)
            (w0, w1, w2), (b0, b1, b2) = model.weights, model.biases
            np.testing.assert_allclose(dense(dense(dense(x, w0, b0, True), w1, b1, True), w2, b2, False), q,
                                       rtol=1e-5, atol=1e-5)
            got = score.scores(rows, now, procs_sum, area_sum)
            assert score.order(rows.tolist(), now, procs_sum, area_sum) == rows[got.argsort(kind="stable")].tolist()
            want = log_limit[rows] + DELTA * q.argmax(axis=1)
            # bands may differ only where numpy's best band leads the compiled best by float32 rounding
            top2 = np.sort(q, axis=1)[:, -2:]
            clear = (top2[:, 1] - top2[:, 0]) > 1e-4 * np.maximum(1.0, np.abs(top2[:, 1]))
            np.testing.assert_array_equal(got[clear], want[clear])
            checked += int(clear.sum())
            total += n
    assert checked > 0.95 * total


def test_kernel_features_are_numpys_bit_for_bit():
    """The first layer fed with the kernel's float32 features equals the one fed with TableFeatures' (the features
    are computed with the same operations on the same float64 numbers)."""
    rng = np.random.default_rng(7)
    feats, log_limit = _table(rng, 500, "queue", scarce=True)
    eye = np.eye(12, dtype=np.float32)
    for n in (1, 3, 50):
        rows = np.sort(rng.choice(500, n, replace=False)).astype(np.int64)
        now = float(feats.submit[rows].max()) + 1234.5
        procs_sum, area_sum = feats.packed[_PROCS:_AREA + 1, rows].sum(axis=1).tolist()
        x = feats(rows, now, (procs_sum, area_sum))
        # an identity first layer and zero biases: dense(x, I, 0) is x itself (x * 1 + 0 * ... in order: exact)
        np.testing.assert_array_equal(dense(x, eye, np.zeros(12, np.float32), False), x)
        from slurm_plugin.rank.dqn import _kernels
        packed = np.ascontiguousarray(feats.packed)
        logs = np.log1p(_kernels.log1p_args(packed, rows, now, feats.c, area_sum))
        assert logs[-1] / feats_module._LOG1P_1000 == _backlog(area_sum, feats.c)  # below 1.5 here
        got = _kernels.features(packed, rows, logs, float(_backlog(area_sum, feats.c)),
                                min(procs_sum / feats.c, 4.0) / 4.0, 0.0)
        # and the kernel's own backlog and pressure (scores computes them from the sums): the same scores
        score = compiled.scorer(feats, log_limit, load_model(DEFAULT_MODEL), DELTA)
        m = load_model(DEFAULT_MODEL)
        np.testing.assert_array_equal(score.scores(rows, now, procs_sum, area_sum),
                                      log_limit[rows] + DELTA * m.q(x).argmax(axis=1))
        np.testing.assert_array_equal(got, x)


def _scored_queues(spec: str, site: str | None, flag: str, monkeypatch):
    """(every (rows, now, procs sum, area sum, the rows in scored order, compiled?) of a queue the simulator scored,
    start times) of the shipped DQN on ``spec``."""
    from slurm_plugin.sim.run import prepare, simulate
    monkeypatch.setenv(compiled.ENV, flag)
    monkeypatch.setattr(loader, "_LOADED", {})
    seen = []

    def by_scores(self, rows, now, procs_sum, area_sum):
        out = UNGATED(self, rows, now, procs_sum, area_sum)
        seen.append((list(rows), now, procs_sum, area_sum, rows[out.argsort(kind="stable")].tolist(), False))
        return out

    def by_order(self, rows, now, procs_sum, area_sum):
        out = ORDER(self, rows, now, procs_sum, area_sum)
        seen.append((list(rows), now, procs_sum, area_sum, out, True))
        return out

    monkeypatch.setattr(DqnRanking, "_ungated_scores", by_scores)
    monkeypatch.setattr(DqnRanking, "_ungated_order", by_order)
    _, out = simulate(prepare(spec, site), "dqn", backfill=True)
    return seen, out.begin


@pytest.mark.skipif(not (SWF / "KTH-SP2-1996-2.1-cln.swf.gz").exists(), reason="shared traces absent")
def test_scored_queues_and_schedule_on_a_trace_equal_numpys(monkeypatch):
    fast, begin = _scored_queues(str(SWF / "KTH-SP2-1996-2.1-cln.swf.gz"), None, "1", monkeypatch)
    slow, ref = _scored_queues(str(SWF / "KTH-SP2-1996-2.1-cln.swf.gz"), None, "0", monkeypatch)
    assert len(fast) == len(slow) > 1000
    assert all(f[5] for f in fast) and not any(s[5] for s in slow)  # each run took the path it was meant to
    assert [f[:5] for f in fast] == [s[:5] for s in slow]  # every queue, time, sum and order
    np.testing.assert_array_equal(begin, ref)


def test_schedule_on_the_heterogeneous_site_equals_numpys(monkeypatch):
    """The general loop (per-node engine, node groups of several architectures) through scores_rows."""
    spec, site = "synthetic:jobs=3000,seed=4", "site_configs/large.yaml"
    root = Path(__file__).resolve().parents[3]
    calls = []

    def rec(self, rows, table, now):
        out = SCORES_ROWS(self, rows, table, now)
        calls.append(self._compiled is not None)
        return out

    monkeypatch.setattr(DqnRanking, "scores_rows", rec)
    _, begin = _scored_queues(spec, str(root / site), "1", monkeypatch)
    assert calls and all(calls)
    calls.clear()
    _, ref = _scored_queues(spec, str(root / site), "0", monkeypatch)
    assert calls and not any(calls)
    np.testing.assert_array_equal(begin, ref)


def test_fallbacks(monkeypatch):
    rng = np.random.default_rng(0)
    feats, log_limit = _table(rng, 50, "none", scarce=False)
    shipped = load_model(DEFAULT_MODEL)
    assert compiled.scorer(feats, log_limit, shipped, DELTA) is not None
    # shapes the kernel does not run: four layers; a margin
    assert compiled.scorer(feats, log_limit, DqnModel.init(hidden=(16, 16, 16)), DELTA) is None
    margin = DqnModel(shipped.weights, shipped.biases, {**shipped.meta, "margin": 0.1})
    assert compiled.scorer(feats, log_limit, margin, DELTA) is None
    # the switches off: no kernel, and a ranking built then scores with numpy
    for env in (compiled.ENV, loader.ENV):
        monkeypatch.setenv(env, "0")
        assert compiled.kernel() is None and compiled.scorer(feats, log_limit, shipped, DELTA) is None
        monkeypatch.delenv(env)
    r = P.DqnRanking(shipped, 512.0, compiled=False)
    from slurm_plugin.rank.heuristics import QueueView
    table = QueueView(submit=feats.submit, limit=feats.limit, procs=feats.procs, qos=feats.qos, now=0.0)
    r._table(table)
    assert r._compiled is None
    r2 = P.DqnRanking(shipped, 512.0)
    r2._table(table)
    assert r2._compiled is not None


@pytest.mark.parametrize("failure", ["numba missing", "no cache location", "warm-up fails"])
def test_kernel_refused_falls_back_to_numpy(monkeypatch, caplog, failure):
    """Whatever keeps the kernel from loading, kernel() is None, the ranking scores with numpy and says why
    (except for a plain missing numba)."""
    monkeypatch.setattr(loader, "_LOADED", {})
    if failure == "numba missing":
        def fail():
            raise ImportError("No module named 'numba'")
        monkeypatch.setattr(compiled, "_import_kernels", fail)
    elif failure == "no cache location":
        def fail():
            raise RuntimeError("cannot cache function 'scores': no locator available for file '_kernels.py'")
        monkeypatch.setattr(compiled, "_import_kernels", fail)
    else:
        def fail(k):
            raise TypeError("No matching definition for argument type(s)")
        monkeypatch.setattr(compiled, "_warm", fail)
    with caplog.at_level("INFO", logger=loader.__name__):
        assert compiled.kernel() is None
    if failure != "numba missing":
        assert "DQN kernel" in caplog.text and "numpy scores" in caplog.text
    rng = np.random.default_rng(1)
    feats, log_limit = _table(rng, 50, "none", scarce=False)
    assert compiled.scorer(feats, log_limit, load_model(DEFAULT_MODEL), DELTA) is None


_LIBM_CHECK = r"""
import json, re, sys
from slurm_plugin.rank import _kernels as heuristics
from slurm_plugin.rank import compiled as loader
from slurm_plugin.rank.dqn import _kernels, compiled
assert compiled.kernel() is not None and loader.heuristics_kernels() is not None
libm = re.compile(r"declare [^\n]*@(llvm\.)?(log|log1p|log2|log10|exp|expm1|pow)[\w.]*\(")
out = {}
for f in (_kernels.log1p_args, _kernels.scores, _kernels.order, heuristics.wfp3_ratios, heuristics.wfp3_finish,
          heuristics.unicep_rows, heuristics.multifactor_rows):
    assert not f.stats.cache_hits, f.__name__  # compiled here: cached code has no IR to inspect
    irs = list(f.inspect_llvm().values())
    out[f.__name__] = [len(ir) for ir in irs] + [m.group(0) for ir in irs for m in libm.finditer(ir)]
json.dump(out, sys.stdout)
"""


def test_no_kernel_calls_libm(tmp_path):
    """numpy takes every transcendental function the scores need (its SIMD code can differ from libm's in the last
    bit): the compiled kernels call none. Checked on the kernels' LLVM code (its declared functions), compiled in
    a fresh process with an empty numba cache (code loaded from a cache has no IR to inspect)."""
    import json
    import os
    import subprocess
    import sys
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _LIBM_CHECK], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout)
    assert len(found) == 7
    for name, (size, *libm) in found.items():
        assert size > 2000 and not libm, (name, size, libm)  # real IR (each kernel's own module), no libm call
