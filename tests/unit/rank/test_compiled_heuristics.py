"""The compiled dynamic heuristics (:mod:`slurm_plugin.rank.compiled`) against the numpy scorers they mirror.

* scores: bit for bit (compared as int64 bit patterns) on random tables: zero and negative waits, limits under
  1e-9, one-core jobs, multifactor with and without node counts;
* the simulator: same schedule with and without kernels on a shared trace, the compiled path really taken;
* a live ranker (``scores`` only) never imports numba;
* without kernels (``HETSCHED_COMPILED=0``) ``scores_rows`` scores the rows' view.
numba is a dependency: these tests fail, not skip, without it.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from slurm_plugin.rank import compiled
from slurm_plugin.rank.heuristics import Multifactor, QueueView, rows_view, unicep, wfp3
from slurm_plugin.sim.hooks import RowsScoreRanking, ScoreRanking, ranking

SWF = Path(__file__).resolve().parents[4] / "shared" / "workloads" / "swf"
SCORERS = {"wfp3": wfp3, "unicep": unicep, "multifactor": Multifactor(total_procs=512.0, max_qos=100.0),
           "multifactor-nodes": Multifactor(weight_age=5000.0, weight_size=2000.0, total_procs=512.0, max_qos=100.0,
                                            total_nodes=64.0)}


def _table(rng, n, nodes=True):
    submit = np.sort(rng.uniform(0, 1e6, n)).round()
    limit = rng.choice([0.0, 1e-12, 30.0, 3600.0, 4e5], n) * rng.uniform(0.5, 2.0, n)
    procs = rng.integers(1, 300, n).astype(float)
    qos = rng.choice([0.0, 10.0, 100.0], n)
    return QueueView(submit, limit, procs, qos, 0.0, None, rng.integers(1, 64, n) if nodes else None)


@pytest.mark.parametrize("name", sorted(SCORERS))
def test_rows_scores_equal_numpys_bit_for_bit(name):
    scorer = SCORERS[name]
    f = compiled.rows_scorer(name, scorer)
    assert f is not None, "numba is installed (a dependency): the kernels must load here"
    rng = np.random.default_rng(len(name))
    for nodes in (True, False):
        table = _table(rng, 2000, nodes)
        for n in (1, 5, 300):
            rows = np.sort(rng.choice(2000, n, replace=False))
            for now in (float(table.submit[rows].max()) + 77.5, float(table.submit[rows].min())):  # waits < 0 too
                got = f(rows, table, now)
                want = np.asarray(scorer(rows_view(table, rows, now)), dtype=float)
                assert got.view(np.int64).tolist() == want.view(np.int64).tolist()


def test_only_dynamic_heuristics_with_kernels_score_by_rows():
    assert isinstance(ranking("wfp3", None, 8.0), RowsScoreRanking)
    assert isinstance(ranking("multifactor", None, 8.0), RowsScoreRanking)
    assert type(ranking("sjf", None, 8.0)) is ScoreRanking  # static: the engine keeps its order, never scores it
    assert type(ranking("weighted", None, 8.0, w_age=1.0)) is ScoreRanking  # np.log: numpy's own SIMD code
    assert compiled.rows_scorer("f1", ranking("f1", None, 8.0).scorer) is None


@pytest.mark.skipif(not (SWF / "KTH-SP2-1996-2.1-cln.swf.gz").exists(), reason="shared traces absent")
@pytest.mark.parametrize("policy", ["wfp3", "unicep", "multifactor"])
def test_schedule_on_a_trace_equals_numpys(monkeypatch, policy):
    from slurm_plugin.sim.run import prepare, simulate
    p = prepare(str(SWF / "KTH-SP2-1996-2.1-cln.swf.gz"), None)
    begins = {}
    for flag in ("1", "0"):
        monkeypatch.setenv(compiled.ENV, flag)
        monkeypatch.setattr(compiled, "_LOADED", {})
        rank = ranking(policy, None, float(p.machine.cores))
        _, out = simulate(p, rank, backfill=True)
        assert (rank._rows[0] is not None) == (flag == "1")  # the path each run was meant to take
        begins[flag] = out.begin
    np.testing.assert_array_equal(begins["1"], begins["0"])


def test_a_live_ranker_never_imports_numba():
    code = ("import sys, numpy as np\n"
            "from slurm_plugin.sim.hooks import ranking\n"
            "from slurm_plugin.rank.heuristics import QueueView\n"
            "r = ranking('wfp3', None, 8.0)\n"
            "r.scores(QueueView(np.zeros(3), np.ones(3), np.ones(3), np.zeros(3), 10.0))\n"
            "print('numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_without_kernels_scores_rows_scores_the_view(monkeypatch):
    monkeypatch.setenv(compiled.ENV, "0")
    monkeypatch.setattr(compiled, "_LOADED", {})
    rank = ranking("unicep", None, 8.0)
    table = _table(np.random.default_rng(3), 100)
    rows = np.arange(10, 40)
    got = rank.scores_rows(rows, table, 5e5)
    assert rank._rows == [None]
    np.testing.assert_array_equal(got, unicep(rows_view(table, rows, 5e5)))


@pytest.mark.skipif(not (SWF / "KTH-SP2-1996-2.1-cln.swf.gz").exists(), reason="shared traces absent")
@pytest.mark.parametrize("policy", ["wfp3", "multifactor", "dqn"])
def test_age_floor_over_a_compiled_ranking_keeps_the_schedule(policy):
    """The tuner's "+floor" rankings go through their inner ranking's compiled ``scores_rows`` (and skip passes
    as a pure ranking does): the schedule of a floor that only scores views and is not marked pure."""
    from slurm_plugin.policy import RankingSpec
    from slurm_plugin.rank.dqn.policy import AgeFloor
    from slurm_plugin.sim.policy import sim_ranking
    from slurm_plugin.sim.run import prepare, simulate

    class ViewsOnly:  # AgeFloor as it was: scores(view) only, never pure
        def __init__(self, floor):
            self.floor, self.name, self.static = floor, floor.name, False

        def scores(self, view):
            return self.floor.scores(view)

    p = prepare(str(SWF / "KTH-SP2-1996-2.1-cln.swf.gz"), None)
    spec = RankingSpec(name=policy, age_floor=True, age_floor_hours=6.0)
    floor = sim_ranking(spec, None, float(p.machine.cores))
    assert isinstance(floor, AgeFloor) and floor.pure
    _, fast = simulate(p, floor, backfill=True)
    _, slow = simulate(p, ViewsOnly(sim_ranking(spec, None, float(p.machine.cores))), backfill=True)
    np.testing.assert_array_equal(fast.begin, slow.begin)
    assert np.isfinite(fast.begin).all()
