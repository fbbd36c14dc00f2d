"""Metrics and ``hetsched status`` on a real cluster: sbatch -> slurmctld -> job_submit.lua -> daemon, counted
in the daemon's Prometheus endpoint (scraped over HTTP) and shown by ``hetsched status --json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slurm_plugin.daemon.process import DaemonProcess
from tests.system.conftest import Needs, allocate_ports, cluster_fixture

pytestmark = pytest.mark.system
SUBMISSIONS = 3

shim_cluster = cluster_fixture("metrics", Needs(job_submit=True))


@pytest.fixture(scope="module")
def daemon(shim_cluster):
    proc = DaemonProcess(shim_cluster.root, metrics_listen=f"127.0.0.1:{allocate_ports(1)}")
    proc.start()
    yield proc
    shim_cluster.client().run("scancel", "--user", "root", check=False)
    proc.stop()


def scrape(url: str) -> list:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return [s for fam in text_string_to_metric_families(reply.read().decode()) for s in fam.samples]


def requests_total(url: str) -> dict[str, float]:
    return {s.labels["decision"]: s.value for s in scrape(url) if s.name == "hetsched_admission_requests_total"}


def test_requests_total_counts_each_sbatch(shim_cluster, daemon):
    url = f"http://{daemon.metrics_listen}/metrics"
    before = requests_total(url)
    slurm = shim_cluster.client()
    ids = [slurm.run("sbatch", "--parsable", "--hold", "-o", "/dev/null", *args, "--wrap", "true").stdout.strip()
           for args in (("--gres=gpu:1",), ("-p", "batch"), ("--comment=class=web",))]
    assert all(i.isdigit() for i in ids), ids
    refused = slurm.run("sbatch", "--hold", "-o", "/dev/null", "--gres=gpu:9", "--wrap", "true", check=False)
    assert refused.returncode != 0
    after = requests_total(url)
    grew = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert sum(grew.values()) == SUBMISSIONS + 1, grew
    assert grew["reject"] == 1 and grew["modify"] >= 1, grew  # the untyped GPU job was routed to a partition

    env = {**os.environ, "SLURM_CONF": str(shim_cluster.conf)}
    out = subprocess.run([sys.executable, "-m", "slurm_plugin", "status", "--site", str(shim_cluster.root / "site.yaml"),
                          "--metrics-url", url, "--state-dir", str(shim_cluster.root / "no-cycle"), "--json"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["metrics_url"] == url and doc["daemon"]["healthy"], doc["daemon"]
    assert doc["daemon"]["requests"]["reject"] >= 1
    assert sum(q["pending"] for q in doc["pending"]) >= SUBMISSIONS  # the held jobs
    assert sum(g["nodes"] for g in doc["node_groups"]) == sum(sum(g["power"].values()) for g in doc["node_groups"])
    assert "missing" not in {s for g in doc["node_groups"] for s in g["power"]}
    assert doc["cycle"]["error"].startswith("no cycle has run")


def test_submissions_without_the_daemon_show_up_once_it_answers(shim_cluster, daemon):
    """The shim fails open while the daemon is down and reports how often on its next answered call."""
    slurm = shim_cluster.client()
    daemon.stop()
    for _ in range(2):
        slurm.run("sbatch", "--hold", "-o", "/dev/null", "--wrap", "true")  # accepted: fail-open
    daemon.start()  # a new process: its counters start at 0
    slurm.run("sbatch", "--hold", "-o", "/dev/null", "--wrap", "true")
    url = f"http://{daemon.metrics_listen}/metrics"
    assert [s.value for s in scrape(url) if s.name == "hetsched_shim_unanswered_total"] == [2.0]
