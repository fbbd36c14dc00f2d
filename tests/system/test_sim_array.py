"""`--slurm`: a sweep's simulations as one Slurm job array on the real local cluster (sbatch --array, the tasks
running in slurmstepd on the cluster's nodes): the same rows as the local run, and a failing task named."""

from __future__ import annotations

import json
import operator

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.sim.parallel import on_slurm, run_all
from slurm_plugin.sim.slurm_array import ArrayError, ArrayOptions

from ..unit.sim.test_parallel import _strip
from .conftest import cluster_fixture

pytestmark = pytest.mark.system
array_cluster = cluster_fixture("simarray")


@pytest.fixture
def on_cluster(array_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", str(array_cluster.conf))
    monkeypatch.setenv("HETSCHED_ARRAY_DIR", str(tmp_path))
    return array_cluster


def test_sim_compare_as_a_job_array_gives_the_local_rows(on_cluster, tmp_path):
    out = {}
    for how in ("-j1", "--slurm"):
        dest = tmp_path / f"{how}.json"
        args = ["sim", "compare", "--site", "demo", "-w", "synthetic:jobs=150,seed=2", "--policies", "fcfs,sjf",
                "--output", str(dest), *(["-j", "1"] if how == "-j1" else ["--slurm"])]
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0, res.output
        out[how] = _strip(json.loads(dest.read_text())["rows"])
    assert out["--slurm"] == out["-j1"] and len(out["-j1"]) == 4
    # the array really ran on the cluster: one log per task in its work directory
    (wd,) = [d for d in tmp_path.iterdir() if d.name.startswith("hetsched-array-")]
    assert sorted(p.name for p in wd.glob("*.log")) == [f"{i}.log" for i in range(4)]
    assert sorted(p.name for p in (wd / "out").iterdir()) == [f"{i}.pkl" for i in range(4)]


def test_a_failing_task_is_named_with_its_error(on_cluster):
    with on_slurm(ArrayOptions(poll_s=0.2, timeout_s=300)):
        assert run_all(operator.mul, 3, [1, 2], jobs=1) == [3, 6]
        with pytest.raises(ArrayError, match=r"task 1 failed: ZeroDivisionError"):
            run_all(operator.truediv, 1, [1, 0], jobs=1)
