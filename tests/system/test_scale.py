"""Elastic power on a real local cluster: idle nodes go down, wanted nodes come up, a burst of jobs runs,
and a node whose boot times out is retried and boots once fixed."""

from __future__ import annotations

import socket
import time

import pytest

from slurm_plugin.decision import Decision, Journal, SlurmApplier
from slurm_plugin.scale.planner import GroupLimits, ScaleConfig, ScaleMemory, plan_power
from slurm_plugin.scale.remediate import RetryPolicy
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import collect_snapshot

from .conftest import Needs, cluster_fixture

pytestmark = pytest.mark.system
ARM = ("armn1", "armn2", "armn3")


scluster = cluster_fixture("scale", Needs(slurm={"suspend_timeout": 5, "resume_timeout": 20}))


@pytest.fixture(scope="module")
def site(scluster):
    return load_site(scluster.state()["site_path"])


def cycle(scluster, site, config, memory=ScaleMemory(), journal=None) -> tuple[Decision, ScaleMemory]:
    client = scluster.client()
    decision, memory = plan_power(collect_snapshot(client), site, config, memory, time.time())
    SlurmApplier(client, journal).apply(decision)
    return decision, memory


def wait_states(client, nodes, pred, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        states = {n: client.show_node(n)["State"] for n in nodes}
        if all(pred(s) for s in states.values()):
            return states
        assert time.monotonic() < deadline, states
        time.sleep(0.5)


def powered_down(state: str) -> bool:
    return "POWERED_DOWN" in state and "POWERING" not in state


def test_idle_nodes_power_down_and_wanted_nodes_come_back(scluster, site, tmp_path):
    client, journal = scluster.client(), Journal(tmp_path / "j.jsonl")
    cfg = ScaleConfig(idle_grace_s=0, default_limits=GroupLimits(warm=1), groups={"cpu-arm": GroupLimits(warm=0)})
    decision, memory = cycle(scluster, site, cfg, journal=journal)
    assert any(set(a.nodes) == set(ARM) and a.action == "POWER_DOWN" for a in decision.actions), decision
    wait_states(client, ARM, powered_down)
    assert not any(scluster.slurmd_running(n) for n in ARM)
    assert "idle >= 0 s" in journal.about_node("armn1")[0]["reason"]
    # an admin floor of two ARM nodes brings two back
    cfg_up = ScaleConfig(idle_grace_s=3600, groups={"cpu-arm": GroupLimits(min_on=2, warm=0)})
    decision, _ = cycle(scluster, site, cfg_up, memory)
    assert [a.nodes for a in decision.actions if a.action == "POWER_UP"] == [("armn1", "armn2")]
    wait_states(client, ("armn1", "armn2"), lambda s: "POWER" not in s and s.startswith("IDLE"))
    assert scluster.slurmd_running("armn1") and scluster.slurmd_running("armn2")


def test_burst_of_jobs_runs_with_the_planner_in_the_loop(scluster, site):
    """Slurm itself also resumes powered-down nodes it allocates; the planner must not get in its way."""
    client = scluster.client()
    cfg = ScaleConfig(idle_grace_s=0, groups={"cpu-arm": GroupLimits(warm=0)})
    _, memory = cycle(scluster, site, cfg)
    wait_states(client, ARM, powered_down)
    jobs = [client.sbatch("-p", "arm", "-n", "64", "--time=2", "--output=/dev/null", wrap="sleep 2")
            for _ in range(3)]
    deadline = time.monotonic() + 120
    while not all(client.show_job(j)["JobState"] == "COMPLETED" for j in jobs):
        assert time.monotonic() < deadline, [client.show_job(j)["JobState"] for j in jobs]
        _, memory = cycle(scluster, site, ScaleConfig(idle_grace_s=3600, groups={"cpu-arm": GroupLimits(warm=0)}),
                          memory)
        time.sleep(1)
    assert {client.show_job(j)["NodeList"] for j in jobs} <= set(ARM)


def test_node_whose_boot_times_out_is_retried_and_boots_once_fixed(scluster, site):
    """Slurm marks the node DOWN at ResumeTimeout; the planner never forces it down for that (its own reason text
    once matched, issue 11), and retries the power-up after the backoff, which boots it once its port is free."""
    client = scluster.client()
    node = "rvn1"
    port = scluster.state()["slurmd_ports"][node]
    cfg = ScaleConfig(idle_grace_s=3600, groups={"cpu-riscv": GroupLimits(warm=0)},
                      retry=RetryPolicy(max_retries=2, backoff_s=1))
    cycle(scluster, site, ScaleConfig(idle_grace_s=0, groups={"cpu-riscv": GroupLimits(warm=0)}))
    wait_states(client, (node,), powered_down)
    actions = []
    with socket.socket() as blocker:  # the node's port is taken: its slurmd cannot start, the boot never ends
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind(("127.0.0.1", port))
        blocker.listen()
        client.scontrol_update("nodename", node, state="POWER_UP")
        memory = ScaleMemory()
        deadline = time.monotonic() + 90
        while not client.show_node(node)["State"].startswith("DOWN"):
            assert time.monotonic() < deadline, client.show_node(node)
            decision, memory = cycle(scluster, site, cfg, memory)
            actions += [a for a in decision.actions if node in a.nodes]
            time.sleep(1)
    assert actions == []  # no force-down at (or before) ResumeTimeout
    deadline = time.monotonic() + 60  # port free again: the retry boots it
    while not (state := client.show_node(node)["State"]).startswith("IDLE") or "POWER" in state:
        assert time.monotonic() < deadline, (state, actions)
        decision, memory = cycle(scluster, site, cfg, memory)
        actions += [a for a in decision.actions if node in a.nodes]
        time.sleep(1)
    assert [(a.action, a.cause.value) for a in actions] == [("POWER_UP", "RETRY")]


def test_calendar_reshape_moves_nodes_without_touching_running_jobs(scluster, site):
    """On a Tuesday in Paris, 'dev' keeps a third of its ARM nodes; a node running a dev job stays until it ends."""
    import datetime as dt

    from slurm_plugin.scale.reshape import plan_reshape
    from slurm_plugin.slurm.client import parse_scontrol_oneliner

    client = scluster.client()
    client.run("scontrol", "update", "nodename=armn[1-3]", "state=POWER_UP", check=False)
    wait_states(client, ARM, lambda s: "POWER" not in s, timeout=60)
    job = client.sbatch("-p", "dev", "-w", "armn3", "--time=2", "--output=/dev/null", wrap="sleep 8")
    client.wait_job(job, until=("RUNNING",), timeout=60)
    tuesday = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.timezone.utc)

    def dev_nodes() -> str:
        return parse_scontrol_oneliner(client.run("scontrol", "-o", "show", "partition", "dev").stdout)["Nodes"]

    decision = plan_reshape(collect_snapshot(client), site, tuesday)
    SlurmApplier(client).apply(decision)
    assert dev_nodes() == "armn[1,3]"
    assert client.show_job(job)["JobState"] == "RUNNING"
    done = client.wait_job(job, timeout=60)
    assert done["JobState"] == "COMPLETED" and done["NodeList"] == "armn3"
    SlurmApplier(client).apply(plan_reshape(collect_snapshot(client), site, tuesday))
    assert dev_nodes() == "armn1"
    saturday = tuesday + dt.timedelta(days=4)
    SlurmApplier(client).apply(plan_reshape(collect_snapshot(client), site, saturday))
    assert dev_nodes() == "armn[1-3]"


def test_portable_work_moves_the_x86_warm_pool_to_arm_in_scale_plan(scluster, site, tmp_path):
    """A running job that may use ARM or x86 is all the CPU demand: `hetsched scale plan` keeps no x86 node warm
    (ARM cores are cheaper), and says why; with --no-arch x86 keeps its warm node."""
    import json

    from click.testing import CliRunner

    from slurm_plugin.cli import main

    client = scluster.client()
    hosts = ARM + ("x86n1", "x86n2")
    client.run("scontrol", "update", f"nodename={','.join(hosts)}", "state=POWER_UP", check=False)
    wait_states(client, hosts, lambda s: "POWER" not in s, timeout=90)
    job = client.sbatch("-p", "batch", "--constraint=aarch64|x86_64", "-n", "8", "-w", "armn1", "--time=2",
                        "--output=/dev/null", wrap="sleep 30")
    client.wait_job(job, until=("RUNNING",), timeout=60)

    def plan(*extra: str) -> list[dict]:
        result = CliRunner().invoke(main, ["scale", "plan", scluster.state()["site_path"], "--json",
                                           "--wait-price", "0", "--idle-grace", "0", "--warm", "1", "--state",
                                           str(tmp_path / "mem.json"), *extra],
                                    env={"SLURM_CONF": str(scluster.conf)})
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    def x86_down(actions: list[dict]) -> tuple[str, str]:
        (a,) = [a for a in actions if any("x86n" in " ".join(c) and "POWER_DOWN" in " ".join(c)
                                          for c in a["commands"])]
        return " ".join(a["commands"][0]), a["reason"]

    command, reason = x86_down(plan())
    assert "nodename=x86n[1-2]" in command, command  # both: the warm pool went to ARM
    assert "portable work is 100% of CPU demand" in reason and "cpu-arm (aarch64)" in reason
    command, reason = x86_down(plan("--no-arch"))
    assert "portable" not in reason and "x86n[1-2]" not in command  # one stays warm
    client.run("scancel", str(job))
