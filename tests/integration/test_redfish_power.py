"""The Redfish power backend against a real Redfish service (sushy-tools' emulator, fake driver) on loopback."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cluster.procs import stop_pid
from slurm_plugin.power.emulator import start_sushy
from slurm_plugin.power.redfish import BmcTarget, RedfishPower, targets_from_site
from slurm_plugin.site import SITE_CONFIGS, load_site

from .power_env import power_logs  # noqa: F401  (fixture)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("power_logs")]
NODES = ["bmcn1", "bmcn2"]


@pytest.fixture(scope="module")
def emulator(tmp_path_factory) -> str:
    """A sushy-emulator with one fake system per node (it applies power changes 1-11 s after a request)."""
    pid, url = start_sushy(tmp_path_factory.mktemp("redfish"), NODES)
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
    dead = RedfishPower({"n": BmcTarget("http://127.0.0.1:9", "n", None, True)}, timeout=2)
    assert "Connection refused" in dead.resume(["n"]).failed["n"]


def test_cli_uses_hostlists(site_file):
    result = CliRunner().invoke(main, ["power", "resume", "--site", str(site_file), "bmcn[1-2]"])
    assert result.exit_code == 0, result.output
    assert "resume bmcn1: ok" in result.output and "resume bmcn2: ok" in result.output



def test_cli_json_has_one_object_per_node(site_file):
    result = CliRunner().invoke(main, ["power", "suspend", "--json", "--site", str(site_file), "bmcn[1-2]"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [(r["host"], r["action"], r["backend"], r["ok"]) for r in doc] == [
        ("bmcn1", "suspend", "redfish", True), ("bmcn2", "suspend", "redfish", True)]
