"""The local multi-node cluster really runs typed-GRES and arch-constrained jobs on the right nodes, powers
nodes down and back up through Slurm's power saving, and stops everything it started."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from slurm_plugin.cluster.local import LocalCluster
from slurm_plugin.cluster.procs import is_running
from slurm_plugin.slurm import SlurmError

from .conftest import TEST_ROOT, Needs, start_cluster

pytestmark = pytest.mark.system


def run(slurm, cluster: LocalCluster, *args: str, script: str = "echo node=$SLURMD_NODENAME") -> tuple[dict, str]:
    """Submit, wait for completion, return (job record, job output)."""
    out = cluster.root / "jobs" / f"{time.monotonic_ns()}.out"
    out.parent.mkdir(exist_ok=True)
    job_id = slurm.sbatch(*args, f"--output={out}", "--time=5", wrap=script)
    job = slurm.wait_job(job_id, timeout=90)
    assert job["JobState"] == "COMPLETED", job
    return job, out.read_text()


def features(slurm, node: str) -> set[str]:
    return set(slurm.show_node(node)["AvailableFeatures"].split(","))


# (sbatch arguments, node group hostnames the job must land on, what the job must see)
PLACEMENT = [
    (["--constraint=aarch64"], {"armn1", "armn2", "armn3"}, None),
    (["--constraint=x86_64"], {"x86n1", "x86n2"}, None),
    (["-p", "riscv", "--constraint=riscv64"], {"rvn1"}, None),
    (["-p", "gpu", "--gres=gpu:a100:1"], {"a100n1"}, "CUDA_VISIBLE_DEVICES=0"),
    (["-p", "gpu", "--gres=gpu:h100:2"], {"gh200n1"}, "CUDA_VISIBLE_DEVICES=0,1"),
    (["-p", "gpu", "--gres=gpu:1", "--constraint=aarch64"], {"gh200n1"}, "CUDA_VISIBLE_DEVICES=0"),
    (["-p", "npu", "--gres=npu:ascend910b:2"], {"npun1"}, None),
    (["-p", "dpu", "--gres=dpu:bluefield3:1"], {"dpun1"}, None),
]


@pytest.mark.parametrize("args,nodes,sees", PLACEMENT, ids=[" ".join(p[0]) for p in PLACEMENT])
def test_job_runs_on_the_right_node(cluster, slurm, args, nodes, sees):
    job, output = run(slurm, cluster, *args, script="echo node=$SLURMD_NODENAME; env")
    assert job["NodeList"] in nodes
    assert f"node={job['NodeList']}" in output
    if sees:
        assert sees in output


def test_nodes_carry_arch_and_accelerator_features(slurm):
    assert {"aarch64", "nvidia", "h100"} <= features(slurm, "gh200n1")
    assert {"aarch64", "huawei", "ascend910b", "apac"} <= features(slurm, "npun1")
    assert slurm.show_node("a100n1")["Gres"] == "gpu:a100:4"


def test_request_no_node_can_serve_is_refused(slurm):
    with pytest.raises(SlurmError, match="Requested node configuration is not available"):
        slurm.sbatch("-p", "gpu", "--gres=gpu:a100:5", wrap="true")


def test_up_twice_is_harmless(cluster):
    before = {p.name: p.pid for p in cluster.status()}
    cluster.up(cluster.state()["site_path"])
    after = {p.name: p.pid for p in cluster.status()}
    assert before == after
    assert all(p.running for p in cluster.status())


def test_power_down_stops_slurmd_and_a_job_brings_it_back(cluster, slurm):
    node = "x86n2"
    pid_before = {p.name: p.pid for p in cluster.status()}[f"slurmd {node}"]
    slurm.scontrol_update("nodename", node, state="POWER_DOWN")
    deadline = time.monotonic() + 60
    while "POWERED_DOWN" not in slurm.show_node(node)["State"] or "POWERING_DOWN" in slurm.show_node(node)["State"]:
        assert time.monotonic() < deadline, slurm.show_node(node)["State"]
        time.sleep(0.5)
    assert not is_running(pid_before, "slurmd"), "SuspendProgram did not stop the node's slurmd"
    assert not cluster.slurmd_running(node)
    started = time.monotonic()
    job, output = run(slurm, cluster, "-w", node)
    assert job["NodeList"] == node and f"node={node}" in output
    assert cluster.slurmd_running(node), "ResumeProgram did not start the node's slurmd"
    assert time.monotonic() - started < 60
    assert "POWER" not in slurm.show_node(node)["State"]


def _processes_under(root: Path) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            fds = [os.readlink(fd) for fd in (proc / "fd").iterdir()]
        except OSError:
            continue
        if str(root) in cmd or any(f.startswith(str(root) + "/") for f in fds):
            found.append(f"{proc.name}: {cmd}")
    return found


def test_down_stops_everything_it_started():
    c = start_cluster("downtest", Needs(job_submit=True, daemon=True))
    slurm = c.client()
    marker = c.root / "running.txt"
    job_id = slurm.sbatch("--time=5", f"--output={c.root}/job.out", wrap=f"touch {marker}; sleep 300")
    slurm.wait_job(job_id, until=("RUNNING",), timeout=60)
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline
        time.sleep(0.2)
    held = slurm.sbatch("--hold", "--time=5", "--output=/dev/null", wrap="true")  # down leaves it to the cold start
    stopped = c.down()
    assert "slurmctld" in stopped and "hetsched daemon" in stopped and any(s.startswith("slurmd ") for s in stopped)
    # the shared munged stays while another cluster (e.g. the session's) runs: see the next test
    assert not [p for p in c.status() if p.running and p.name != "munged (shared)"]
    assert _processes_under(c.root) == []
    c = start_cluster("downtest", Needs(job_submit=True))
    try:
        left = c.client().run("squeue", "-h", "-o", "%A").stdout.split()
        assert str(job_id) not in left and str(held) not in left, left
    finally:
        c.down()


def test_a_failed_up_leaves_nothing_running():
    """The daemon refuses to start (right-sizing names a history file that is not there): `up` raises and stops
    the slurmctld and slurmd it had started, so their ports are free for the next try."""
    from slurm_plugin.cluster.local import ClusterError

    with pytest.raises(ClusterError, match="did not route a GPU job"):
        start_cluster("failedup", Needs(job_submit=True, daemon=True,
                                        policy={"rightsize": {"mode": "apply", "history": "no-such-history.sacct"}}))
    root = TEST_ROOT / "failedup"
    assert _processes_under(root) == []
    assert "no-such-history.sacct" in (root / "log" / "hetsched-daemon.log").read_text()


def test_shared_munged_outlives_the_first_of_two_clusters():
    from slurm_plugin.cluster.local import munge_ok

    first, second = start_cluster("mungeA", Needs()), start_cluster("mungeB", Needs())
    try:
        first.down()
        assert munge_ok(), "the other cluster still needs munged"
        assert second.client().run("squeue", "-h").returncode == 0
        second.down()
        if not second._others_running():  # no cluster of another test still up: the last one stops munged
            assert "munged (shared)" not in [p.name for p in second.status() if p.running]
    finally:
        first.down()
        second.down()


def test_a_root_an_earlier_cluster_named_otherwise_cold_starts():
    """CI once lost the fidelity replay to slurmctld's 'fatal: CLUSTER NAME MISMATCH': its root held the state
    of an earlier run under another ClusterName. A cold start keeps no state, so the old name must not stop it."""
    spool = TEST_ROOT / "renamed" / "spool" / "ctld"
    spool.mkdir(parents=True, exist_ok=True)
    (spool / "clustername").write_text("hs-some-earlier-cluster\n")
    c = start_cluster("renamed", Needs())
    try:
        assert c.client().run("sinfo", "-h", "-o", "%n").stdout.split()
        # 22.05 writes the name, 24.11 'name|cluster id'
        assert (spool / "clustername").read_text().strip().split("|")[0] == "hs-test-renamed"
    finally:
        c.down()


def test_a_cluster_that_loses_the_race_to_start_munged_uses_the_winners(monkeypatch):
    """Clusters started at the same moment: both see no munged, the second's munged then refuses the socket the
    first's holds (a real munged, really refused). The second goes on with the first's, and does not own it."""
    from slurm_plugin.cluster import local

    cluster = start_cluster("mungerace", Needs())
    try:
        assert local.munge_ok()  # the winner's munged (or another test's) is up
        real, checks = local.munge_ok, []

        def late():  # the loser's first check came just before the winner's munged answered
            checks.append(1)
            return len(checks) > 1 and real()

        monkeypatch.setattr(local, "munge_ok", late)
        assert cluster._ensure_munge() is None and len(checks) > 1
        assert real()
    finally:
        cluster.down()
