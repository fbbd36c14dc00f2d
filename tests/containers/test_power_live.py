"""The container power backend on the real container cluster: Slurm's POWER_DOWN stops a node's container (its
shutdown), a job for that node starts it again (its boot) and runs there; every call goes through the host's
power relay and ``hetsched power --backend container`` (logged in ``log/power.log``)."""

from __future__ import annotations

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
