"""A host crash under the container cluster: every container's processes and the power relay die at once, and
Podman's records still say "running" (its conmon died too, so no exit was recorded; after a reboot the same
holds here, where /run is on disk and Podman does not see the reboot). ``up`` must tell those containers from
running ones, remove them and bring the cluster back with its state: slurmctld's job ids go on from its last
saved state and the accounting database keeps the jobs run before the crash. Runs last (it brings the session's
cluster back)."""

from __future__ import annotations

import time

import pytest

from slurm_plugin.cluster.containers import ContainerError
from slurm_plugin.cluster.procs import is_running
from tests.containers.conftest import bring_up, crash, until

pytestmark = [pytest.mark.containers, pytest.mark.host_crash]
JOB = ("-p", "x86", "-D", "/tmp", "-o", "/dev/null")


def _in_accounting(cluster, *jobs: int) -> bool:
    out = cluster.client().run("sacct", "-X", "-n", "-P", "-a", "-o", "JobID,State",
                               "-j", ",".join(map(str, jobs))).stdout.split()
    return sorted(out) == sorted(f"{j}|COMPLETED" for j in jobs)


def test_up_brings_the_cluster_back_after_its_host_crashed(cluster):
    root = cluster.client()
    before, submitted = root.sbatch(*JOB, wrap="hostname"), time.time()
    assert root.wait_job(before, 120)["JobState"] == "COMPLETED"
    assert until(lambda: _in_accounting(cluster, before), 30)
    # slurmctld writes its job state (with the next job id) a few seconds after a change; a crash before that
    # loses the last job id, as on any host (a CI run crashed it so and job 38 came twice): wait for a write after
    # the submit (the job's end makes one)
    job_state = cluster.root / cluster.plan().data("ctld") / "job_state"
    assert until(lambda: job_state.stat().st_mtime > submitted, 60), "slurmctld did not save its job state"
    assert {st for _, st in cluster.container_states().values()} == {"running"}

    crash(cluster)
    states = cluster.container_states()
    assert {st for _, st in states.values()} == {"stale"}, states
    assert not is_running(cluster.state().get("relay_pid"))
    # a stale node container is off: powering it off is a no-op, powering it on fails with the remedy (Podman's
    # own `start` would exit 0 and start nothing)
    node = cluster.plan().nodes[0]
    assert "already off" in cluster.power_node(node, False)
    with pytest.raises(ContainerError, match="stale.*cluster up"):
        cluster.power_node(node, True)
    assert cluster.container_states()[node][1] == "stale"

    bring_up(cluster)
    assert {st for _, st in cluster.container_states().values()} == {"running"}
    root = cluster.client()
    after = root.sbatch(*JOB, wrap="hostname")
    assert root.wait_job(after, 120)["JobState"] == "COMPLETED"
    assert after > before  # slurmctld's state (its next job id) survived
    assert until(lambda: _in_accounting(cluster, before, after), 30)  # MariaDB kept the job run before
    assert is_running(cluster.state().get("relay_pid"))
