import numpy as np
import pytest

from slurm_plugin.tune.score import per_job, score
from slurm_plugin.workload.jobs import JobTable


def _jobs(n=6, qos=None):
    return JobTable.build({"submit": [float(i) for i in range(n)], "run": [100.0] * n, "limit": [200.0] * n,
                           "nodes": [1] * n, "cores": [1] * n, "qos_priority": qos or [0.0] * n})


def test_only_masked_jobs_are_scored_and_unstarted_wait_to_the_end():
    jobs = _jobs()
    begin = np.array([0, 1, 2, 103, 104, np.nan])
    end = begin + 100
    mask = np.array([False, False, False, True, True, True])
    s = score(jobs, begin, end, mask)
    assert s.jobs == 3 and s.unstarted == 1
    assert s.max_wait_s == pytest.approx(204 - 5)  # the unstarted job waits until the last end (204)
    assert s.avg_wait_s == pytest.approx((100 + 100 + 199) / 3)
    assert s.objective == s.avg_bsld and len(s.blocks) == 3


def test_tier_wait_weights_each_tier_average_by_its_rank():
    wait = np.array([10.0, 30.0, 100.0])
    qos = np.array([0.0, 0.0, 2.0])
    c = per_job("tier_wait", wait, np.ones(3), qos)
    assert c.mean() == pytest.approx((1 * 20 + 2 * 100) / 3)
    with pytest.raises(ValueError, match="unknown objective"):
        per_job("bogus", wait, np.ones(3), qos)
