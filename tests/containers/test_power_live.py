"""The container power backend on the real container cluster: Slurm's POWER_DOWN stops a node's container (its
shutdown), a job for that node starts it again (its boot) and runs there; every call goes through the host's
power relay and ``hetsched power --backend container`` (logged in ``log/power.log``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.containers.conftest import until

pytestmark = pytest.mark.containers
NODE = "x86n2"


def test_power_down_stops_the_container_and_a_job_boots_it(cluster):
    root = cluster.client()
    state = lambda: cluster.container_states()[NODE][1]  # noqa: E731
    node = lambda: root.show_node(NODE).get("State", "")  # noqa: E731
    root.scontrol_update("node", NODE, state="POWER_DOWN")
    assert until(lambda: state() == "exited", 90), f"container still {state()} (node {node()})"
    assert until(lambda: "POWERED_DOWN" in node() and "POWERING_DOWN" not in node(), 90), node()
    job = root.sbatch("-w", NODE, "-D", "/tmp", "-o", "/dev/null", wrap="hostname")
    done = root.wait_job(job, 150)
    assert done["JobState"] == "COMPLETED" and done["NodeList"] == NODE, done
    assert state() == "running"
    log = (cluster.root / "log" / "power.log").read_text()
    for action in ("suspend", "resume"):
        assert f"{action} node={NODE} backend=container" in log and "result=ok" in log, log


def test_a_power_down_that_did_not_happen_does_not_kill_the_next_boot(cluster):
    """A suspend the "BMC" never carried out (its request lost: the relay is paused and the request removed)
    leaves the container running while Slurm counts the node off; the next job's boot restarts the container
    (its old slurmd would never count as booted: ResumeTimeout, DOWN, the job requeued) and the job runs."""
    root = cluster.client()
    node = lambda: root.show_node(NODE).get("State", "")  # noqa: E731
    inbox = cluster.root / cluster.plan().data("ctld") / "power"
    relay = cluster.state()["relay_pid"]
    assert until(lambda: "IDLE" in node() and "POWER" not in node(), 120), node()
    os.kill(relay, signal.SIGSTOP)
    try:
        root.scontrol_update("node", NODE, state="POWER_DOWN")
        assert until(lambda: any(f.read_text().startswith("suspend") for f in inbox.glob("[0-9]*")), 30), \
            list(inbox.iterdir())
        for request in inbox.glob("[0-9]*"):
            request.unlink()  # lost
        assert until(lambda: "POWERED_DOWN" in node() and "POWERING_DOWN" not in node(), 90), node()
        assert cluster.container_states()[NODE][1] == "running"
        job = root.sbatch("-w", NODE, "-D", "/tmp", "-o", "/dev/null", wrap="hostname")
        assert until(lambda: "POWERING_UP" in node(), 30), node()
    finally:
        os.kill(relay, signal.SIGCONT)
    done = root.wait_job(job, 150)
    assert done["JobState"] == "COMPLETED" and done["NodeList"] == NODE and done["Restarts"] == "0", done
    assert f"resume node={NODE} backend=container" in (log := (cluster.root / "log" / "power.log").read_text())
    assert "restarted (it ran while Slurm booted the node)" in log.splitlines()[-1], log.splitlines()[-3:]


def test_a_failed_boot_is_set_down_through_the_cluster(cluster):
    """ResumeFailProgram's ``hetsched power resume-fail`` sets the node DOWN with its reason through the ctl
    container: the host needs no munged with the cluster's key (CI's host has none after `make test`)."""
    root = cluster.client()
    proc = subprocess.run([sys.executable, "-m", "slurm_plugin", "power", "resume-fail", "--backend", "container",
                           "--cluster", str(cluster.root), "--site", str(cluster.root / "site.yaml"),
                           "--log-file", str(cluster.root / "log" / "power-test.log"), NODE],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "SLURM_CONF": "/nonexistent"})
    assert proc.returncode == 1, proc.stderr
    assert "could not set DOWN" not in proc.stderr and "set DOWN" in proc.stderr, proc.stderr
    # slurmctld's own record of it (24.11 returns the node to service at its next answer: ReturnToService=2)
    log = (cluster.root / "log" / "ctl" / "slurmctld.log").read_text()
    assert f"node {NODE} reason set to: resume failed (container): ResumeTimeout reached" in log, log[-2000:]
    assert f"node {NODE} state set to DOWN" in log.split("resume failed (container)")[-1], log[-2000:]
    if "DOWN" in root.show_node(NODE)["State"]:  # 24.11 may return it between this read and the update, and then
        root.run("scontrol", "update", f"node={NODE}", "state=RESUME", check=False)  # refuses: "Invalid node state"
    assert until(lambda: "IDLE" in root.show_node(NODE)["State"], 60), root.show_node(NODE)
