"""Metrics and ``hetsched status`` on a real cluster: sbatch -> slurmctld -> job_submit.lua -> daemon, counted
in the daemon's Prometheus endpoint (scraped over HTTP) and shown by ``hetsched status --json``; last, a real
Prometheus server (Debian's ``prometheus``, installed by ``make test``) scrapes the daemon and ``hetsched cycle
run`` and is asked through its HTTP API, including every query of the Grafana dashboard."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slurm_plugin.daemon.process import DaemonProcess
from slurm_plugin.data import data_file
from tests.system.conftest import Needs, allocate_ports, cluster_fixture
from tests.unit.daemon.test_dashboard import panels
from tests.waiting import until, wait_for

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


PROMETHEUS = shutil.which("prometheus")
POWER_ALL = ["--no-pack", "--no-reshape", "--idle-grace", "0", "--warm", "0", "--wait-price", "0"]


def promql(base: str, query: str) -> list[dict]:
    """The result vector of an instant query through Prometheus' HTTP API (AssertionError on an error)."""
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            doc = json.loads(reply.read())
    except urllib.error.HTTPError as err:  # 400 for a bad query: its JSON names the error
        doc = json.loads(err.read() or b"{}")
    assert doc.get("status") == "success", f"{query}: {doc.get('errorType')}: {doc.get('error')}"
    return doc["data"]["result"]


def value(base: str, query: str) -> float | None:
    result = promql(base, query)
    return float(result[0]["value"][1]) if result else None


@pytest.fixture
def cycle_loop(shim_cluster, tmp_path):
    """`hetsched cycle run` on the cluster, powering idle nodes down at once, with its metrics on a test port."""
    listen = f"127.0.0.1:{allocate_ports(1)}"
    env = {**os.environ, "SLURM_CONF": str(shim_cluster.conf)}
    with open(tmp_path / "cycle.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "slurm_plugin", "cycle", "run", "--site",
                                 str(shim_cluster.root / "site.yaml"), "--state-dir", str(tmp_path / "state"),
                                 "--interval", "2", "--metrics-listen", listen, *POWER_ALL],
                                env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    yield listen
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def prometheus(daemon, cycle_loop, tmp_path):
    """A real Prometheus scraping the daemon and the cycle every second; yields its base URL."""
    if PROMETHEUS is None:
        pytest.skip("prometheus is not installed (make test installs Debian's package)")
    port = allocate_ports(1)
    config = tmp_path / "prometheus.yml"
    config.write_text(json.dumps({  # YAML is a superset of JSON
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": "hetsched-daemon", "static_configs": [{"targets": [daemon.metrics_listen]}]},
                           {"job_name": "hetsched-cycle", "static_configs": [{"targets": [cycle_loop]}]}]}))
    with open(tmp_path / "prometheus.log", "w") as log:
        proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{base}/-/ready", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False
    try:
        wait_for(lambda: f"prometheus ready ({(tmp_path / 'prometheus.log').read_text()[-2000:]})", ready, 60)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_a_real_prometheus_scrapes_the_suite(shim_cluster, daemon, prometheus, tmp_path):
    """Through Prometheus' HTTP API: both targets up, requests_total grows by exactly the submissions, the
    cycle's powering down shows as nodes in power state off and as applied power actions, and every query of
    the Grafana dashboard is valid PromQL there (the arch/accelerator join returns series)."""
    wait_for("both targets up", lambda: value(prometheus, 'sum(up{job=~"hetsched-.*"})') == 2, 60)
    before = wait_for("requests_total in Prometheus",
                      lambda: value(prometheus, "sum(hetsched_admission_requests_total)"), 30)
    slurm = shim_cluster.client()
    for _ in range(SUBMISSIONS):
        slurm.run("sbatch", "--hold", "-o", "/dev/null", "--wrap", "true")
    wait_for(lambda: f"requests_total {before} + {SUBMISSIONS} (now "
                     f"{value(prometheus, 'sum(hetsched_admission_requests_total)')})",
             lambda: value(prometheus, "sum(hetsched_admission_requests_total)") == before + SUBMISSIONS, 30)
    off = 'sum(hetsched_pool_nodes{power=~"off|powering_down"})'
    wait_for(lambda: f"a powered-down node in the pool gauge (cycle log: "
                     f"{(tmp_path / 'cycle.log').read_text()[-1500:]})", lambda: (value(prometheus, off) or 0) > 0, 90)
    assert value(prometheus, 'sum(hetsched_cycle_actions_total{kind="power",status="ok"})') >= 1
    assert value(prometheus, 'sum(hetsched_cycle_runs_total{outcome="ok"})') >= 1
    assert value(prometheus, "sum(hetsched_pool_power_watts)") > 0
    until(lambda: value(prometheus, 'sum(hetsched_pool_nodes{power="off"})'), 60)  # let 'off' reach the TSDB

    # the same power decisions in the decision store, with what the cycle decided them from
    out = subprocess.run([sys.executable, "-m", "slurm_plugin", "decisions", "--journal",
                          str(tmp_path / "state" / "journal.jsonl"), "--kind", "power", "--since", "10m", "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    entries = json.loads(out.stdout)
    assert entries and all(e["ok"] and e["inputs"]["cycle"] >= 1 and e["inputs"]["nodes"] > 0 for e in entries)

    doc = json.loads(data_file("daemon", "grafana/hetsched.json").read_text())
    empty = []
    for p in panels(doc):
        for t in p["targets"]:
            if not promql(prometheus, t["expr"].replace("$__rate_interval", "1m")):
                empty.append(p["title"])
    by_arch = promql(prometheus, panels(doc)[0]["targets"][0]["expr"])
    assert {r["metric"].get("arch") for r in by_arch} >= {"x86_64", "aarch64"}, by_arch
    print(f"dashboard panels without data in this short run: {sorted(set(empty))}")
    if os.environ.get("HETSCHED_PANELS_PNG"):  # the README's image: a few minutes of traffic, then render
        _traffic_then_render(prometheus, slurm, doc, Path(os.environ["HETSCHED_PANELS_PNG"]))


PANELS = ("Nodes by architecture and power state", "Estimated draw", "Pending jobs by class", "Requests by decision",
          "Submit latency in the daemon", "Cycles by outcome, rollbacks")


def _traffic_then_render(base: str, slurm, doc: dict, out: Path, minutes: float = 4.0) -> None:
    import time

    from tests.system.panels import render

    classes = ("web", "batch", "hpc")
    deadline, i = time.monotonic() + minutes * 60, 0
    while time.monotonic() < deadline:
        slurm.run("sbatch", "--hold", "-o", "/dev/null", f"--comment=class={classes[i % 3]}", "--wrap", "true",
                  check=False)
        if i % 7 == 6:
            slurm.run("sbatch", "-o", "/dev/null", "--gres=gpu:9", "--wrap", "true", check=False)  # refused
        i += 1
        time.sleep(3)
    slurm.run("scancel", "--user", "root", check=False)
    time.sleep(10)
    chosen = [p for p in panels(doc) if p["title"] in PANELS]
    render(base, chosen, out, minutes + 1.5)
