"""A many-node site on one host: large.yaml cut to 280 nodes, every node powered down at start (State=CLOUD),
no slurmd running; slurmctld manages them all, a job resumes its one bootable node on demand, and a node the host
may not boot is set DOWN with the reason instead of starting a slurmd."""

from __future__ import annotations

import time

import pytest
import yaml

from slurm_plugin.cluster.local import LocalCluster
from slurm_plugin.site import SITE_CONFIGS
from slurm_plugin.slurm.sdiag import rpc_stats
from slurm_plugin.snapshot import collect_snapshot

from .conftest import TEST_ROOT, allocate_ports

pytestmark = pytest.mark.system
BOOTABLE = "usx01"
PORT_SPAN = 10


@pytest.fixture(scope="module")
def pcluster():
    root = TEST_ROOT / "powered-down"
    root.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((SITE_CONFIGS / "large.yaml").read_text())
    for cluster in data["clusters"]:
        for group in cluster["node_groups"]:
            group["count"] = max(1, group["count"] // 8)
            group["digits"] = 2
    port = allocate_ports(1 + PORT_SPAN)
    data["slurm"].update(cluster_name="hs-test-powered-down", slurmctld_port=port, slurmd_port=port + 1,
                         resume_timeout=60, max_job_count=50000, max_array_size=10001)
    site_file = root / "site.yaml"
    site_file.write_text(yaml.safe_dump(data, sort_keys=False))
    c = LocalCluster(root)
    c.down()
    c.up(site_file, powered_down=True, port_span=PORT_SPAN, bootable=[BOOTABLE], wait=120)
    yield c
    c.down()


def _states(client) -> dict[str, str]:
    return {n["NodeName"]: n.get("State", "") for n in client.show_nodes()}


def _wait_state(client, node: str, want: str, timeout: float = 120.0) -> str:
    """Wait until ``node``'s base state (before any ``+FLAG``) is ``want``."""
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        state = _states(client).get(node, "")
        if state.split("+")[0] == want:
            return state
        time.sleep(1)
    raise AssertionError(f"{node} not {want} within {timeout:.0f} s: {state}")


def test_every_node_managed_and_powered_down_without_slurmd(pcluster):
    client = pcluster.client()
    states = _states(client)
    hosts = list(pcluster.state()["slurmd_ports"])
    assert len(hosts) == 280 and set(states) == set(hosts)
    assert all("POWERED_DOWN" in s for s in states.values()), {h: s for h, s in states.items()
                                                              if "POWERED_DOWN" not in s}
    assert not [h for h in hosts if pcluster.slurmd_running(h)]
    snap = collect_snapshot(client)
    assert len(snap.nodes) == 280


def test_a_job_resumes_its_bootable_node(pcluster):
    client = pcluster.client()
    job = client.sbatch("-p", "x86", "-w", BOOTABLE, "-t", "5", "-o", "/dev/null", wrap="true")
    done = client.wait_job(job, timeout=180)
    assert done["JobState"] == "COMPLETED", done
    assert pcluster.slurmd_running(BOOTABLE)
    # the other nodes sharing its port block stay off: only the resumed node runs a slurmd
    assert [h for h in pcluster.state()["slurmd_ports"] if pcluster.slurmd_running(h)] == [BOOTABLE]


def test_nodes_the_host_may_not_boot_go_down_with_the_reason_in_one_update(pcluster):
    """Three nodes powered up together are refused alike: the resume program sets them DOWN in one scontrol
    (one REQUEST_UPDATE_NODE beside the power-up's own), not one per node."""
    client = pcluster.client()
    client.run("sdiag", "--reset")
    client.run("scontrol", "update", "nodename=usx[02-04]", "state=POWER_UP")
    for node in ("usx02", "usx03", "usx04"):
        state = _wait_state(client, node, "DOWN")
        reason = client.run("sinfo", "-h", "-n", node, "-o", "%E").stdout
        assert "not bootable" in reason, (state, reason)
        assert not pcluster.slurmd_running(node)
    updates = rpc_stats(client.run("sdiag").stdout)[0]["REQUEST_UPDATE_NODE"].count
    assert updates == 2, updates
