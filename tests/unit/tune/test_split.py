import numpy as np
import pytest

from slurm_plugin.tune.split import split_history, held_back_mask, tune_part
from slurm_plugin.workload.jobs import JobTable


def _jobs(submits):
    n = len(submits)
    return JobTable.build({"submit": submits, "run": [10.0] * n, "limit": [20.0] * n, "nodes": [1] * n,
                           "cores": [1] * n})


def test_split_is_by_submit_time_and_keeps_ties_together():
    jobs = _jobs([0, 1, 2, 3, 4, 5, 6, 6, 6, 9])
    s = split_history(jobs, 0.7)
    assert (s.tune_jobs, s.test_jobs, s.cut_time) == (9, 1, 9.0)
    assert len(tune_part(jobs, s)) == 9
    assert held_back_mask(s).tolist() == [False] * 9 + [True]


def test_plain_split():
    s = split_history(_jobs(list(range(10))), 0.7)
    assert (s.tune_jobs, s.test_jobs) == (7, 3)


@pytest.mark.parametrize("frac", [0.0, 1.0, -0.1, 1.5])
def test_bad_fraction(frac):
    with pytest.raises(ValueError, match="tune fraction"):
        split_history(_jobs([0, 1, 2]), frac)


def test_all_ties_cannot_split():
    with pytest.raises(ValueError, match="same time"):
        split_history(_jobs([5, 5, 5]), 0.5)
