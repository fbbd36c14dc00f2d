"""Slurm's own power saving through the IPMI backend, end to end on a real local cluster:
slurmctld -> SuspendProgram/ResumeProgram (the production programs: backend from the site file) ->
``hetsched power suspend|resume --site SITE`` -> ipmitool
(lanplus) -> one ipmi_sim BMC per node -> its chassis control -> the node's slurmd stops/starts (the local
backend plays the node's hardware). Two ARM nodes get BMCs; the rest of the cluster is left alone."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.integration.ipmi_bmc import HAVE_IPMI, SKIP_REASON, bmc_group, start_bmc, write_creds
from tests.system.conftest import Needs, start_cluster
from tests.system.test_scale import powered_down, wait_states

from slurm_plugin.cluster.local import LocalCluster
from slurm_plugin.cluster.procs import stop_pid
from slurm_plugin.conf.programs import power_programs
from slurm_plugin.power.ipmi import IpmiPower, targets_from_site
from slurm_plugin.site import load_site

pytestmark = [pytest.mark.system, pytest.mark.skipif(not HAVE_IPMI, reason=SKIP_REASON)]
NODES = ("armn1", "armn2")


def _script(path: Path, body: str) -> None:
    tmp = path.with_suffix(".new")
    tmp.write_text("#!/bin/sh\n" + body)
    tmp.chmod(0o755)
    os.replace(tmp, path)  # slurmctld may exec it at any moment: never a half-written file


@pytest.fixture(scope="module")
def ipmi_cluster() -> Iterator[tuple[LocalCluster, Path]]:
    cluster = start_cluster("ipmi", Needs(slurm={"suspend_timeout": 10, "resume_timeout": 40}))
    root, started = Path(cluster.root), {}
    try:
        bmc, bin_dir = root / "bmc", root / "bin"
        bmc.mkdir(exist_ok=True)
        for action in ("resume", "suspend"):  # the local backend becomes the nodes' "hardware"
            shutil.copy(bin_dir / action, bin_dir / f"{action}-local")
        for node in NODES:
            _script(bmc / f"{node}.on", f"exec {bin_dir}/resume-local {node}\n")
            _script(bmc / f"{node}.off", f"exec {bin_dir}/suspend-local {node}\n")
            started[node] = start_bmc(bmc, node, powered=True)
        creds = write_creds(bmc / "bmc.cred")
        groups = [bmc_group(f"bmc-{n}", "armn", i, started[n][1], creds) for i, n in enumerate(NODES, 1)]
        site = bmc / "bmc-site.yaml"
        site.write_text(yaml.safe_dump({"name": "bmcs", "clusters": [{"name": "c", "node_groups": groups}],
                                        "partitions": [{"name": "all", "node_groups": [g["name"] for g in groups]}]}))
        # What slurm.conf's power programs now run: the production programs, backend from the site file.
        programs = power_programs(["--site", str(site), "--slurm-conf", str(cluster.conf), "--log-file",
                                   str(root / "log" / "power-calls.log")], output=str(root / "log" / "power.log"))
        for action, text in programs.items():
            _script(bin_dir / action, text.removeprefix("#!/bin/sh\n"))
        yield cluster, site
    finally:
        for pid, _ in started.values():
            stop_pid(pid, "ipmi_sim")
        cluster.down()


def test_slurm_powers_nodes_down_and_up_through_their_bmcs(ipmi_cluster):
    cluster, site = ipmi_cluster
    client, bmcs = cluster.client(), IpmiPower(targets_from_site(load_site(site)))
    assert [bmcs.power_state(n) for n in NODES] == ["on", "on"]
    client.run("scontrol", "update", "nodename=armn[1-2]", "state=POWER_DOWN")
    wait_states(client, NODES, powered_down, timeout=60)
    assert [bmcs.power_state(n) for n in NODES] == ["off", "off"]
    assert not any(cluster.slurmd_running(n) for n in NODES)
    job = client.sbatch("-p", "arm", "-w", "armn1", "-n", "1", "--time=2", "--output=/dev/null", wrap="true")
    done = client.wait_job(job, timeout=120, until=("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"))
    assert done["JobState"] == "COMPLETED", done
    assert bmcs.power_state("armn1") == "on" and cluster.slurmd_running("armn1")
    assert bmcs.power_state("armn2") == "off" and not cluster.slurmd_running("armn2")
    log = (Path(cluster.root) / "log" / "power.log").read_text()
    assert "suspend armn1: ok (ipmi" in log and "suspend armn2: ok (ipmi" in log and "resume armn1: ok (ipmi" in log, log
    calls = (Path(cluster.root) / "log" / "power-calls.log").read_text()
    assert "resume node=armn1 backend=ipmi duration=" in calls and "result=ok" in calls, calls
