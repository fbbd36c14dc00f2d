"""The DQN's features are computed faster than the module table's straightforward formulas, and must stay the
same numbers bit for bit (the shipped model reads them): this file keeps the straightforward version (the code
before the speed-up, unchanged) and compares features, Q-network bands and scores on random and real queues."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from slurm_plugin.rank.dqn import DqnModel, DqnRanking, job_features, load_model
from slurm_plugin.rank.dqn.features import N_FEATURES, WEEK_S
from slurm_plugin.rank.dqn.model import DEFAULT_MODEL
from slurm_plugin.rank.dqn.policy import band_scores
from slurm_plugin.rank.heuristics import QueueView

SWF = Path(__file__).resolve().parents[4] / "shared" / "workloads" / "swf"


def _pct_reference(values):
    n = len(values)
    if n <= 1:
        return np.zeros(n)
    srt = np.sort(values)
    return np.searchsorted(srt, values, side="left") / (n - 1)


def job_features_reference(submit, limit, procs, qos, now, total_cores, scarcity=None, max_qos=None):
    """The features as first written (one formula per column, straight into the float32 table)."""
    n = len(submit)
    out = np.empty((n, N_FEATURES), dtype=np.float32)
    if n == 0:
        return out
    c = max(float(total_cores), 1.0)
    procs = np.asarray(procs, dtype=float)
    limit = np.maximum(np.asarray(limit, dtype=float), 1.0)
    wait = np.maximum(now - np.asarray(submit, dtype=float), 0.0)
    area = procs * limit
    out[:, 0] = np.minimum(procs / c, 1.0)
    out[:, 1] = np.log2(1.0 + procs) / np.log2(1.0 + c)
    out[:, 2] = np.minimum(np.log10(limit) / np.log10(WEEK_S), 1.5)
    out[:, 3] = np.minimum(np.log1p(wait) / np.log1p(WEEK_S), 1.5)
    out[:, 4] = np.minimum(np.log1p(wait / limit) / np.log1p(100.0), 1.5)
    out[:, 5] = np.log10(1.0 + area) / np.log10(1.0 + c * WEEK_S)
    out[:, 6] = _pct_reference(limit)
    out[:, 7] = _pct_reference(procs)
    out[:, 8] = min(np.log1p(area.sum() / c / 3600.0) / np.log1p(1000.0), 1.5)
    out[:, 9] = min(procs.sum() / c, 4.0) / 4.0
    out[:, 10] = 0.0 if scarcity is None else np.clip(scarcity, 0.0, 1.0)
    qos = np.asarray(qos, dtype=float)
    top = max_qos if max_qos else float(qos.max(initial=0.0))
    out[:, 11] = qos / top if top > 0 else 0.0
    return out


def _bands_reference(m: DqnModel, x: np.ndarray) -> np.ndarray:
    """:meth:`DqnModel.bands` as first written (the network always run, the gate applied after)."""
    q = m.q(x)
    best = np.argmax(q, axis=1)
    margin = float(m.meta.get("margin", 0.0))
    if margin > 0:
        best[q[np.arange(len(q)), best] - q[:, 0] <= margin] = 0
    gate = m.meta.get("backlog_gate")
    if gate is not None:
        light = x[:, 8] <= float(gate)
        if m.meta.get("gate_constrained"):
            light &= x[:, 10] <= 0
        best[light] = 0
    return best


def _variants(model: DqnModel) -> list[DqnModel]:
    """The shipped model ungated, gate_constrained (a higher gate), with a margin, and with a gate that holds
    most random queues."""
    w, b, meta = model.weights, model.biases, model.meta
    return [DqnModel(w, b, {k: v for k, v in meta.items() if k != "backlog_gate"}),
            DqnModel(w, b, {**meta, "gate_constrained": True, "backlog_gate": 0.9}),
            DqnModel(w, b, {**meta, "margin": 0.05}),
            DqnModel(w, b, {**meta, "backlog_gate": 0.9})]


def _random_queues(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.choice([1, 2, 3, 17, 64, 193, 700]))
        submit = rng.integers(0, 10**6, n).astype(float) + (rng.random(n) if i % 3 == 0 else 0.0)
        limit = rng.choice([0.0, 0.5, 1.0, 60.0, 3600.0, 86400.0, 30 * 86400.0, 1e9], n) * (1 + (i % 2) * rng.random(n))
        procs = rng.choice([1, 2, 3, 64, 1000, 10**6], n).astype(float)
        qos = rng.choice([0.0, 10.0, 500.0], n)
        scarcity = None if i % 4 == 0 else rng.choice([-0.5, -0.0, 0.0, 0.25, 1.0, 3.0], n)
        now = float(submit.max() + rng.choice([-100.0, 0.0, 7.5, 1e7]))
        total = float(rng.choice([0.5, 1.0, 64.0, 1024.0, 93312.0]))
        max_qos = [None, 0.0, 1000.0, 2][i % 4]
        yield submit, limit, procs, qos, now, total, scarcity, max_qos


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_features_are_the_reference_bits_on_random_queues(seed):
    for q in _random_queues(seed, 60):
        new, ref = job_features(*q), job_features_reference(*q)
        assert _same_bits(new, ref), q


def _trace_queues():
    """Windows of real traces as queues seen at the last job's submit (run with its own machine size)."""
    from slurm_plugin.workload import read_swf
    for name in ("lublin_256.swf", "KTH-SP2-1996-2.1-cln.swf.gz"):
        if not (SWF / name).exists():
            continue
        w = read_swf(SWF / name)
        j = w.jobs
        total = float(w.machine[0] * w.machine[1])
        for lo, n in ((0, 1), (100, 40), (2000, 250), (5000, 600)):
            s = slice(lo, lo + n)
            yield (j.submit[s], j.limit[s], j.procs[s].astype(float), j.qos_priority[s], float(j.submit[s][-1]) + 50.0,
                   total, np.zeros(n), None)


def test_features_bands_and_scores_are_the_reference_ones_on_trace_queues():
    queues = list(_trace_queues())
    if not queues:
        pytest.skip("shared traces absent")
    model = load_model(DEFAULT_MODEL)
    ungated, constrained, margin, _ = _variants(model)
    rng = np.random.default_rng(5)
    gated = 0
    for submit, limit, procs, qos, now, total, _, max_qos in queues:
        for able in (np.full(len(submit), total), np.where(rng.random(len(submit)) < 0.2, total / 3, total)):
            scarce = 1.0 - np.clip(able / total, 0.0, 1.0)
            ref = job_features_reference(submit, limit, procs, qos, now, total, scarce, max_qos)
            assert _same_bits(job_features(submit, limit, procs, qos, now, total, scarce, max_qos), ref)
            view = QueueView(submit, limit, procs, qos, now, able=able)
            for m in (model, ungated, constrained, margin):
                got = DqnRanking(m, total).scores(view)
                gated += bool(m.gated(ref[:, 8], ref[:, 10]).all()) if "backlog_gate" in m.meta else 0
                want = band_scores(limit, _bands_reference(m, ref))
                assert _same_bits(np.asarray(got, dtype=float), want)
    assert gated  # the shortcut was taken on some queues (and gave the network's scores)


@pytest.mark.parametrize("seed", range(3))
def test_table_features_are_the_reference_bits(seed):
    """Queues drawn from one job table (the simulator's case): per-job columns computed once, then taken by row,
    give the reference bits for any subset, in any order, at any time; and DqnRanking scores such a view (rows
    and table set) exactly as a plain view of the same jobs."""
    from slurm_plugin.rank.dqn.features import TableFeatures
    rng = np.random.default_rng(100 + seed)
    model = load_model(DEFAULT_MODEL)
    for submit, limit, procs, qos, now, total, scarcity, max_qos in _random_queues(seed, 30):
        n = len(submit)
        table = TableFeatures(submit, limit, procs, qos, total, scarcity, max_qos)
        able = None if scarcity is None else rng.choice([0.0, total / 2, total], n)
        whole = QueueView(submit, limit, procs, qos, 0.0, able)
        ranking = DqnRanking(model, total, max_qos)
        variants = [(m, DqnRanking(m, total, max_qos)) for m in _variants(model)]
        for _ in range(4):
            rows = rng.permutation(n)[:int(rng.integers(0, n + 1))]
            sub = [a[rows] for a in (submit, limit, procs, qos)]
            scarce = None if scarcity is None else scarcity[rows]
            t = now + float(rng.choice([-50.0, 0.0, 3600.0]))
            assert _same_bits(table(rows, t), job_features_reference(*sub, t, total, scarce, max_qos))
            plain = QueueView(*sub, t, None if able is None else able[rows])
            tabled = QueueView(*sub, t, None if able is None else able[rows], rows=rows, table=whole)
            assert _same_bits(ranking.scores(tabled), DqnRanking(model, total, max_qos).scores(plain))
            for m, r in variants:  # scores_rows' shortcuts (gate decided per queue, network skipped) per variant
                assert _same_bits(r.scores_rows(rows, whole, t), DqnRanking(m, total, max_qos).scores(plain))
