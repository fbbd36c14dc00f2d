"""The shim's trust in whoever serves its socket, and its static routing when no trusted daemon answers.

Real job_submit.lua under lua5.1 (stand-in slurm table). The socket's owner and its directory's mode are set
for real (chown/chmod, as root); the forged listener answers what an attacker would.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from .fake_daemon import FakeDaemon, accept
from .test_shim import run

FORGED = {"site_factor": 999999999, "partition": "gpu"}
FALLBACK = {"gpu": "gpu", "npu": "npu", "gpu:a100": "gpu"}
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")


def config(where: Path, **extra) -> Path:
    """The shim config; a 2 s timeout because these tests are about trust, not speed (50 ms flaked under load)."""
    path = where / "hetsched-shim.json"
    path.write_text(json.dumps({"version": 1, "socket": str(where / "run" / "d.sock"), "timeout_ms": 2000,
                                "fail": "open", "site": "demo", "fallback": {"gres": FALLBACK}, **extra}))
    return path


@pytest.fixture
def rundir(tmp_path):
    d = tmp_path / "run"
    d.mkdir(mode=0o755)
    return d


def forged(rundir: Path) -> FakeDaemon:
    return FakeDaemon(rundir / "d.sock", lambda line: accept(FORGED, "forged"))


def test_trusted_daemon_is_believed(tmp_path, rundir):
    daemon = forged(rundir)  # root-owned socket in a root-owned 0755 directory: the real daemon's setup
    try:
        assert run(config(tmp_path), {"tres_per_node": "gres:gpu:1"})["set"] == FORGED
    finally:
        daemon.close()


def test_socket_of_another_user_is_not_believed(tmp_path, rundir):
    daemon = forged(rundir)
    os.chown(rundir / "d.sock", 65534, 65534)  # what an unprivileged listener's socket looks like
    try:
        result = run(config(tmp_path), {"tres_per_node": "gres:gpu:1"})
        assert daemon.requests == []  # never even asked
        assert result["set"] == {"partition": "gpu"}  # static table only: no forged site_factor
        assert any("owned by uid 65534" in m for m in result["log"])
        # the configured daemon uid is trusted
        assert run(config(tmp_path, daemon_uid=65534), {"tres_per_node": "gres:gpu:1"})["set"] == FORGED
    finally:
        daemon.close()


@pytest.mark.parametrize("mode, trusted", [(0o777, False), (0o775, False), (0o1777, True), (0o755, True)])
def test_directory_others_can_write_is_not_believed(tmp_path, rundir, mode, trusted):
    daemon = forged(rundir)
    os.chmod(rundir, mode)
    try:
        result = run(config(tmp_path), {"tres_per_node": "gres:gpu:1"})
        assert (result["set"] == FORGED) is trusted
        assert trusted or any("writable by others" in m for m in result["log"])
    finally:
        daemon.close()


@pytest.mark.parametrize("job, partition", [
    ({"tres_per_node": "gres:gpu:1"}, "gpu"),                    # --gres=gpu:1 (22.05)
    ({"tres_per_node": "gres/gpu=1"}, "gpu"),                    # 23.02+ forms
    ({"tres_per_node": "gres/gpu:a100:1"}, "gpu"),
    ({"tres_per_job": "gres:gpu:2"}, "gpu"),                     # --gpus=2
    ({"tres_per_node": "gres:npu:2"}, "npu"),
    ({"tres_per_node": "gres:gpu:a100:1"}, "gpu"),               # typed
    ({"tres_per_node": "gres:gpu:1", "partition": "batch"}, None),   # the user's partition is kept
    ({"tres_per_node": "gres:gpu:1,gres:npu:1"}, None),          # no single partition: left to Slurm
    ({"tres_per_node": "gres:fpga:1"}, None),                    # not in the table
    ({"features": "aarch64|x86_64"}, None),
])
def test_fail_open_routes_by_the_static_table(tmp_path, job, partition):
    result = run(config(tmp_path), job)  # no daemon at all
    assert result["rc"] == 0
    assert result["set"] == ({"partition": partition} if partition else {})


def test_fail_closed_still_refuses(tmp_path):
    result = run(config(tmp_path, fail="closed"), {"tres_per_node": "gres:gpu:1"})
    assert result["rc"] != 0 and result["set"] == {}


def test_modification_of_a_claim_goes_to_the_daemon_with_the_owner(tmp_path, rundir):
    daemon = FakeDaemon(rundir / "d.sock", lambda line: accept())
    try:
        assert run(config(tmp_path), {"comment": "class=ai-training", "job_id": 7}, mode="modify")["rc"] == 0
        sent = daemon.request()
    finally:
        daemon.close()
    assert sent["op"] == "modify" and sent["job"]["comment"] == "class=ai-training"
