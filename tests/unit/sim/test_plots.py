"""Timeline binning is a time-weighted mean of a step function."""

import numpy as np
import pytest

from slurm_plugin.sim.plots import binned


@pytest.mark.parametrize("t,y,edges,expected", [
    ([0, 10], [4, 0], [0, 10], [4.0]),                # constant 4 over the bin
    ([0, 5, 10], [2, 6, 0], [0, 10], [4.0]),          # half 2, half 6
    ([0, 5, 10], [2, 6, 0], [0, 5, 10], [2.0, 6.0]),
    ([0, 2, 10], [10, 0, 0], [0, 4, 8], [5.0, 0.0]),  # 10 for 2 s in a 4 s bin
])
def test_binned(t, y, edges, expected):
    got = binned(np.asarray(t, float), np.asarray(y, float), np.asarray(edges, float))
    assert got.tolist() == pytest.approx(expected)
