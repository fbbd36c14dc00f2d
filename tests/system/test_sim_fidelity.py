"""The simulator against the real local Slurm cluster, on a small heterogeneous replay (`hetsched sim fidelity`'s
path with few jobs, so it stays short): typed and untyped GPU and NPU jobs, multi-node and arch-bound jobs,
workload classes the admission daemon turns into SiteFactor bands, Slurm's power saving with the local
cluster's 2 s boots. The big replays (300 and 1,000 jobs) are `hetsched sim fidelity` runs whose records are
in results/sim/fidelity/, not tests."""

from __future__ import annotations

import json
import logging
import os

import pytest

from slurm_plugin.site import Site
from slurm_plugin.sim.fidelity import fidelity_ok
from slurm_plugin.cli.sim_fidelity import run_on_local_cluster
from slurm_plugin.sim.fidelity_replay import RAN, compare_record, replay_timing
from slurm_plugin.sim.fidelity_workload import hetero_workload

from .conftest import TEST_ROOT, allocate_ports

pytestmark = pytest.mark.system
log = logging.getLogger(__name__)
JOBS = int(os.environ.get("HETSCHED_FIDELITY_JOBS", "16"))


@pytest.fixture(scope="module")
def replay():
    """Replay once on a real cluster (up and down inside); the tests read the record and the comparison."""
    jobs = hetero_workload(JOBS, seed=23, compress=120.0)  # submitted over 29 s, all ended by ~55 s
    record, data = run_on_local_cluster("demo", jobs, TEST_ROOT / "simfid", allocate_ports(11), timeout_s=600)
    site = Site.model_validate(data)
    report = compare_record(site, record, replay_timing(record, data))
    out = os.environ.get("HETSCHED_FIDELITY_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump({"report": report, "site": data, "record": record}, fh, indent=1)
    log.info("fidelity: %s", {k: v for k, v in report.items() if not k.endswith("_start_s")})
    return jobs, record, report


def test_every_job_ran_and_was_recorded(replay):
    jobs, record, report = replay
    states = {j["id"]: j.get("state") for j in record["jobs"]}
    assert len(states) == len(jobs) and set(states.values()) <= RAN, states
    assert report["jobs"] == len(jobs)
    assert any(j["spec"]["gres"] for j in record["jobs"])  # GRES jobs ran on the fake devices
    assert len(record["power"]) == 10 and all(c[0][1] for c in record["power"].values())
    assert record["slurm_version"].split(".")[0] in ("22", "23", "24", "25")


def test_start_order_agrees(replay):
    """Small replays are noisy (one swapped pair of 16 jobs costs 0.017): the issue's 0.9 is checked on the
    300-job replays (results/sim/fidelity/), this guards against the replay path breaking."""
    _, _, report = replay
    assert report["kendall_tau"] >= 0.8, {k: report[k] for k in ("kendall_tau", "real_start_s", "sim_start_s")}
    ok, why = fidelity_ok(report)
    log.info("fidelity_ok: %s %s", ok, why)
