"""Isolation's power cycle on the real container cluster (Slurm 22.05 or 24.11): a node drained the way the
Epilog drains it after a sensitive job is power-cycled by the suite container's steering cycle alone (its
``wipe`` step runs first in every cycle, whatever the policy file's steps) through the container power backend
(its container stopped), then undrained while off; the next job asking for it makes Slurm start the container
again (a fresh boot). (The container cluster runs no Prolog/Epilog:
it configures none; the Epilog's drain is made here by hand, as the Epilog makes it.)"""

from __future__ import annotations

import pytest

from slurm_plugin.deploy.wipe import drain_reason
from tests.containers.conftest import until

pytestmark = pytest.mark.containers
NODE = "x86n1"


def test_the_cycle_power_cycles_a_node_after_sensitive_work_and_resumes_it(cluster):
    client = cluster.client()
    node = lambda: client.show_node(NODE)  # noqa: E731
    container = lambda: cluster.container_states()[NODE][1]  # noqa: E731
    log = cluster.root / "log" / "power.log"
    before = log.read_text().count(f"suspend node={NODE}") if log.exists() else 0
    client.scontrol_update("node", NODE, state="DRAIN", reason=drain_reason(9001))
    phases = []

    def suspends() -> int:
        return log.read_text().count(f"suspend node={NODE}") if log.exists() else 0

    def seen() -> bool:
        state, reason = node().get("State", ""), node().get("Reason", "")
        phases.append((state, reason.split(" [")[0]))
        return suspends() == before + 1 and "DRAIN" not in state and "POWERING" not in state  # off, undrained
    assert until(seen, 300, step=2), phases[-5:]
    reasons = [r for _, r in phases]
    assert any("deploy: wiping after sensitive job 9001" in r for r in reasons), phases
    job = client.sbatch("-w", NODE, "-D", "/tmp", "-o", "/dev/null", wrap="hostname")
    assert client.wait_job(job, 300)["JobState"] == "COMPLETED"
    # its container was stopped, then started again (by Slurm for this job, or by the power planner for its
    # warm pool) before the job ran: a fresh boot
    lines = log.read_text().splitlines()
    last_suspend = max(i for i, line in enumerate(lines) if f"suspend node={NODE}" in line)
    assert any(f"resume node={NODE}" in line for line in lines[last_suspend:]), lines[-10:]
    assert container() == "running" and suspends() == before + 1
