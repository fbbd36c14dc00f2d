"""The Redfish power backend against a real Redfish service (sushy-tools' emulator, fake driver) on loopback."""

from __future__ import annotations

import socket
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cluster.procs import spawn_detached, stop_pid
from slurm_plugin.power.redfish import RedfishPower, targets_from_site
from slurm_plugin.site import SITE_CONFIGS, load_site

pytestmark = pytest.mark.integration
NODES = ["bmcn1", "bmcn2"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def emulator(tmp_path_factory) -> str:
    """A sushy-emulator with one fake system per node (it applies power changes 1-11 s after a request)."""
    import shutil

    exe = shutil.which("sushy-emulator")
    assert exe, "sushy-emulator missing: pip install '.[test]'"
    tmp = tmp_path_factory.mktemp("redfish")
    systems = [{"uuid": f"00000000-0000-0000-0000-00000000000{i}", "name": n, "power_state": "Off",
                "external_notifier": False, "nics": []} for i, n in enumerate(NODES, 1)]
    (tmp / "emulator.conf").write_text(f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}\n"
                                       f"SUSHY_EMULATOR_STATE_DIR = {str(tmp / 'state')!r}\n")
    port = _free_port()
    pid = spawn_detached([exe, "--fake", "--config", str(tmp / "emulator.conf"), "-i", "127.0.0.1", "-p", str(port)],
                         tmp / "emulator.log")
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url + "/redfish/v1/Systems", timeout=1).read()
            break
        except OSError:
            assert time.monotonic() < deadline, (tmp / "emulator.log").read_text()
            time.sleep(0.2)
    yield url
    assert stop_pid(pid, "sushy-emulator")


@pytest.fixture(scope="module")
def site_file(emulator, tmp_path_factory) -> Path:
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["clusters"][0]["node_groups"].append({
        "name": "bmc-nodes", "prefix": "bmcn", "count": 2, "cpu": {"arch": "x86_64", "cores": 8},
        "memory_gb": 16, "bmc": {"protocol": "redfish", "address": emulator, "system": "{node}"}})
    path = tmp_path_factory.mktemp("site") / "site.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def wait_state(be: RedfishPower, node: str, want: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while (state := be.power_state(node)) != want:
        assert time.monotonic() < deadline, f"{node} still {state}"
        time.sleep(0.5)


def test_resume_and_suspend_are_applied_and_idempotent(site_file):
    be = RedfishPower(targets_from_site(load_site(site_file)))
    assert be.power_state("bmcn1") == "Off"
    first = be.resume(["bmcn1"])
    assert first.ok and first.done == ["bmcn1"]
    assert be.resume(["bmcn1"]).ok  # asked twice while the BMC is still applying: accepted again, no error
    wait_state(be, "bmcn1", "On")
    assert be.resume(["bmcn1"]).ok  # already on: nothing sent
    assert be.suspend(["bmcn1"]).ok
    wait_state(be, "bmcn1", "Off")


def test_unknown_node_and_unreachable_bmc_fail_clearly(site_file):
    be = RedfishPower(targets_from_site(load_site(site_file)))
    res = be.resume(["x86n1"])
    assert res.failed == {"x86n1": "no Redfish BMC configured for this node (site: node_groups[].bmc)"}
    dead = RedfishPower({"n": type(be.targets["bmcn1"])("http://127.0.0.1:9", "n", None, True)}, timeout=2)
    assert "Connection refused" in dead.resume(["n"]).failed["n"]


def test_cli_uses_hostlists(site_file):
    result = CliRunner().invoke(main, ["power", "resume", "--backend", "redfish", "--site", str(site_file),
                                       "bmcn[1-2]"])
    assert result.exit_code == 0, result.output
    assert "resume bmcn1: ok" in result.output and "resume bmcn2: ok" in result.output
