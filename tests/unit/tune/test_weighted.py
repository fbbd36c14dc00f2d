"""The weighted ranking the tuner fits: its special cases, the policy file's checks, and sim/live building it."""

import numpy as np
import pytest

from slurm_plugin.policy import PolicyError, RankingSpec, policy_from_dict
from slurm_plugin.rank import QueueView, Weighted, fcfs, sjf
from slurm_plugin.sim.policy import sim_ranking


def _view():
    rng = np.random.default_rng(1)
    n = 50
    submit = np.sort(rng.uniform(0, 1000, n))
    return QueueView(submit=submit, limit=rng.integers(60, 10_000, n).astype(float),
                     procs=rng.integers(1, 64, n).astype(float), qos=np.zeros(n), now=2000.0)


def _order(scores, q):
    return np.lexsort((q.submit, scores)).tolist()


def test_special_cases_are_sjf_and_fcfs():
    q = _view()
    assert _order(Weighted(1, 0, 0)(q), q) == _order(sjf(q), q)
    assert _order(Weighted(0, 0, 1)(q), q) == _order(fcfs(q), q)


def test_policy_file_reads_weights_only_for_weighted():
    spec = policy_from_dict({"ranking": {"name": "weighted", "w_size": 0.5, "w_age": 1}})
    assert spec.ranking.params() == {"w_estimate": 1.0, "w_size": 0.5, "w_age": 1.0}
    with pytest.raises(PolicyError, match="ranking.w_size: only the weighted ranking"):
        policy_from_dict({"ranking": {"name": "sjf", "w_size": 0.5}}, "f.yaml")
    with pytest.raises(PolicyError, match="ranking.w_age: must be >= 0"):
        policy_from_dict({"ranking": {"name": "weighted", "w_age": -1}})
    with pytest.raises(PolicyError, match=r"ranking.w_estimate: must be in \[-10, 10\]"):
        policy_from_dict({"ranking": {"name": "weighted", "w_estimate": 11}})


def test_simulator_builds_it_from_the_spec():
    r = sim_ranking(RankingSpec(name="weighted", w_size=1.0, w_age=0.0, age_floor=False))
    assert r.name == "weighted" and r.static
    q = _view()
    assert np.allclose(r.scores(q), np.log(q.limit) + np.log(q.procs))
    aged = sim_ranking(RankingSpec(name="weighted", w_age=1.0, age_floor=True))
    assert not aged.static and aged.name == "weighted+floor24h"
