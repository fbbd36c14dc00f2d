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


def test_rolling_origins_cut_equal_blocks_after_the_first_origin():
    from slurm_plugin.tune.split import fold_masks, rolling_origins

    j = _jobs(list(range(100)))
    o = rolling_origins(j)
    assert o == [40, 55, 70, 85, 100]
    m = fold_masks(100, o)
    assert m["fit2"].sum() == 70 and m["val2"].sum() == 15 and not (m["fit2"] & m["val2"]).any()
    assert m["val"].sum() == 60 and m["train"].sum() == 40 and m["all"].all()
    # same-second submits stay in one block; colliding cuts merge
    assert rolling_origins(_jobs([0] * 50 + [1] * 10 + list(range(2, 42)))) == [50, 60, 70, 85, 100]
    assert rolling_origins(_jobs([0] * 80 + list(range(1, 21)))) == [80, 85, 100]
    with pytest.raises(ValueError, match="no validation block"):
        rolling_origins(_jobs([0] * 10))
