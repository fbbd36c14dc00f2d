"""Sensitive work on a real local cluster: a mix of sensitive and other jobs through the real shim and daemon;
sensitive jobs run only on the sensitive group's exclusive partition, never beside another job, the node is
power-cycled through its power backend (the local cluster's: slurmd stopped, booted in a fresh time namespace)
before anything else runs there, and every sensitive job has its audit record (start and end, chain intact).
The 1,000-submission run is `hetsched bench deploy` (results/deploy/)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from slurm_plugin.cluster.procs import spawn_detached, stop_pid
from slurm_plugin.deploy import audit, isolation
from slurm_plugin.deploy.site_patch import patch_site, wipe_cycle_argv
from tests.system.conftest import Needs, cluster_fixture
from tests.waiting import until

pytestmark = pytest.mark.system

cluster = cluster_fixture("deploy-isolation", Needs(job_submit=True, daemon=True, patch=patch_site,
                                                    slurm={"suspend_timeout": 5, "resume_timeout": 60}))
JOBS, SENSITIVE_EVERY = 24, 8  # 3 sensitive, each followed by a power cycle of its node (~18 s)


def test_sensitive_jobs_never_share_a_node_and_the_node_is_cycled_before_reuse(cluster):
    client = cluster.client()
    trace = cluster.root / "trace.log"
    trace.unlink(missing_ok=True)
    shutil.rmtree(cluster.root / "cycle", ignore_errors=True)  # an earlier run's journal and wipe memory
    # the power cycle after sensitive work is the steering cycle's wipe step (no process of its own)
    steering = spawn_detached(wipe_cycle_argv(sys.executable, cluster.root / "site.yaml", cluster.root / "cycle"),
                              cluster.root / "log" / "cycle.log", env={**os.environ, "SLURM_CONF": str(cluster.conf)})
    try:
        sensitive, ids = set(), []
        for is_sensitive, args in isolation.mixed_jobs(JOBS, SENSITIVE_EVERY):
            proc = client.run("sbatch", "--parsable", "-o", "/dev/null", *args,
                              input=isolation.job_script(str(trace), 0.5), check=False)
            assert proc.returncode == 0, proc.stderr
            job = proc.stdout.strip().split(";")[0]
            ids.append(job)
            if is_sensitive:
                sensitive.add(job)
                assert "form sensitive" in proc.stderr, proc.stderr
        until(lambda: not client.run("squeue", "-h", "-o", "%i", check=False).stdout.strip(), timeout=420, step=2)
        events = isolation.parse(trace.read_text())
        assert {e.job for e in events if e.kind == "end"} == set(ids)  # every job ran to its end
        assert isolation.violations(events, sensitive) == []
        nodes = {e.node for e in events if e.job in sensitive}
        assert nodes <= {"x86n1", "x86n2"}  # only the group marked sensitive
        # the cycle went through the power programs: a suspend per sensitive job's node (Slurm resumes it for
        # its next job; isolation.violations above checks that job started after the boot)
        power = (cluster.root / "log" / "power.log").read_text()
        assert all("suspend" in power and n in power for n in nodes), power[-2000:]
        records = audit.records(cluster.root / "audit.jsonl")
        for job in sensitive:
            mine = [r for r in records if str(r["job_id"]) == job]
            assert [r["event"] for r in mine] == ["start", "end"], mine
            assert mine[0]["user"] == "root" and mine[0]["node"] in nodes and mine[0]["partition"] == "secure"
        assert audit.verify(cluster.root / "audit.jsonl") == []
        # every node is back in service after its cycle
        until(lambda: all("DRAIN" not in client.show_node(n).get("State", "") for n in nodes), timeout=90, step=2)
        # ... and the steering cycle did it, through its applier: every edge journaled with its cause
        journal = [json.loads(line) for line in (cluster.root / "cycle" / "journal.jsonl").read_text().splitlines()]
        edges = [(e["action"], e["nodes"][0]) for e in journal if e.get("cause") == "ISOLATION" and e["ok"]]
        for node in nodes:
            assert [a for a, n in edges if n == node][:3] == ["POWER_DOWN_FORCE", "DRAIN", "UNDRAIN"], edges
        # the manual one-shot shares the cycle's memory and lock: refused while the loop runs
        once = subprocess.run([sys.executable, "-m", "slurm_plugin", "deploy", "wipe", "--site",
                               str(cluster.root / "site.yaml"), "--slurm-conf", str(cluster.conf), "--state-dir",
                               str(cluster.root / "cycle")], capture_output=True, text=True, timeout=120)
        assert once.returncode == 3 and "hetsched.lock" in once.stderr, once.stderr
    finally:
        stop_pid(steering, "cycle run")


def test_a_job_asking_the_sensitive_partition_without_the_class_is_refused(cluster):
    proc = cluster.client().run("sbatch", "-p", "secure", "--wrap", "true", check=False)
    assert proc.returncode != 0 and "holds only sensitive work" in proc.stderr, proc.stderr

