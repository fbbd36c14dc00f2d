"""Serverless functions on a real local cluster: `hetsched fn deploy`, the gateway (HTTP) started by pid,
an invocation cold (a pilot job submitted, scheduled, its container started) then warm, the pilot an ordinary
Slurm job (squeue), and scale to zero after the idle timeout (10 s in the test site)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import shutil
import socket
import sys
import urllib.request
from pathlib import Path

import pytest

from slurm_plugin.cluster.procs import spawn_detached, stop_pid
from slurm_plugin.deploy.build import build_busybox
from slurm_plugin.deploy.site_patch import patch_site
from tests.system.conftest import Needs, allocate_ports, cluster_fixture
from tests.waiting import until

pytestmark = [pytest.mark.system,
              pytest.mark.skipif(not (shutil.which("umoci") and shutil.which("runc") and Path("/bin/busybox").exists()),
                                 reason="needs umoci, runc and busybox-static (make deps installs them)")]

cluster = cluster_fixture("deploy-fn", Needs(job_submit=True, daemon=True, patch=patch_site))


def _post(url: str, doc: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(doc).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=200) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def gateway(cluster):
    site = cluster.site()
    build_busybox(site.deploy.image_store, "busybox:latest")
    state = cluster.root / "fn"
    hetsched = [sys.executable, "-m", "slurm_plugin"]
    subprocess.run([*hetsched, "fn", "deploy", "greet", "--image", "busybox", "--class", "burst", "--command",
                    'echo "hello $*"', "--site", str(cluster.root / "site.yaml"), "--state", str(state)], check=True)
    port = allocate_ports(1)
    pid = spawn_detached([*hetsched, "fn", "serve", "--site", str(cluster.root / "site.yaml"), "--state", str(state),
                          "--listen", f"127.0.0.1:{port}", "--runtime-root", str(cluster.root / "run" / "fn"),
                          "--slurm-conf", str(cluster.conf)], cluster.root / "log" / "fn.log",
                         env={**os.environ, "SLURM_CONF": str(cluster.conf)})
    until(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0, timeout=30, step=0.2)
    yield f"http://127.0.0.1:{port}"
    stop_pid(pid, "fn serve")


def test_cold_then_warm_invocation_on_a_pilot_job_then_scale_to_zero(cluster, gateway):
    client = cluster.client()
    cold = _post(f"{gateway}/invoke/greet", {"args": ["a b", "c"]})
    assert cold["stdout"] == "hello a b c\n" and cold["exit"] == 0 and cold["cold"], cold
    job = client.show_job(int(cold["pilot"]))
    assert job["JobName"] == "hs-fn-greet" and job["JobState"] == "RUNNING" and "fn=greet" in job["Comment"]
    warm = [_post(f"{gateway}/invoke/greet", {"args": [str(i)]}) for i in range(20)]
    assert all(w["stdout"] == f"hello {i}\n" and not w["cold"] for i, w in enumerate(warm))
    assert {w["pilot"] for w in warm} == {cold["pilot"]}
    # idle timeout 10 s: the pilot is released, its job ends, nothing of the function stays in the queue
    until(lambda: client.show_job(int(cold["pilot"]))["JobState"] == "COMPLETED", timeout=90, step=1)
    status = json.loads(urllib.request.urlopen(f"{gateway}/status", timeout=10).read())
    assert status["greet"]["idle"] == [] and status["greet"]["pending"] == []


def test_unknown_function_is_a_clear_error(gateway):
    with pytest.raises(urllib.error.HTTPError) as err:
        _post(f"{gateway}/invoke/nosuch", {"args": []})
    assert "no function 'nosuch' (deployed: greet)" in json.loads(err.value.read())["error"]
