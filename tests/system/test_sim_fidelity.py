"""The simulator against the real local Slurm cluster: the same short sleep jobs, the same site and partition,
multifactor priority and backfill at the cycles Slurm ran; the start order must agree (issue target: Kendall
tau >= 0.9)."""

from __future__ import annotations

import json
import logging
import os

import pytest

from slurm_plugin.sim.fidelity import (compare_starts, process_start_epoch, replay_on_slurm, replay_workload,
                                       simulate_replay)

from .conftest import Needs, cluster_fixture

pytestmark = pytest.mark.system
log = logging.getLogger(__name__)
PARTITION = "batch"


simfid = cluster_fixture("simfid", Needs())


@pytest.fixture(scope="module")
def report(simfid):
    """Replay once on the real cluster and in the simulator; the tests below read the comparison."""
    jobs = replay_workload(n=int(os.environ.get("HETSCHED_FIDELITY_JOBS", "20")))
    real, bf_cycles = replay_on_slurm(simfid.client(), jobs, PARTITION,
                                      backfill_epoch=process_start_epoch(simfid.state()["slurmctld_pid"]))
    rep = compare_starts(real, simulate_replay(simfid.site(), PARTITION, jobs, real, bf_cycles=bf_cycles))
    out = os.environ.get("HETSCHED_FIDELITY_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump({**rep, "real": real, "bf_cycles": bf_cycles}, fh, indent=2)
    log.info("fidelity: %s", {k: v for k, v in rep.items() if not k.endswith("_start_s")})
    assert rep["jobs"] == len(jobs)
    return rep


def test_start_order_agrees(report):
    """Issue target. Kendall tau-b measured 0.99-1.0 in eight runs on this host once the simulator backfills at
    Slurm's recorded cycles and submits keep half a second off Slurm's clock (results/sim); before that 0.84, 0.78,
    0.89 and 0.94. With HETSCHED_FIDELITY_JOBS=30 it measured 0.96 and 0.86: this fails there."""
    assert report["kendall_tau"] >= 0.9, report
