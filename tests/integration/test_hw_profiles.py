"""A BIOS profile through a real Redfish service (sushy-tools' emulator; its fake driver made to keep BIOS
attributes, pending until the system next boots): apply, read back pending, reboot, audit clean, then drift."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cluster.procs import stop_pid
from slurm_plugin.hw.bios import RedfishBios
from slurm_plugin.power.emulator import start_sushy
from slurm_plugin.power.redfish import targets_from_site
from slurm_plugin.site import SITE_CONFIGS, load_site

from .power_env import power_logs  # noqa: F401  (fixture)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("power_logs")]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site_file(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("bios")
    pid, url = start_sushy(work, ["hwn1", "hwn2"], power_state="On",
                           command=[sys.executable, "-m", "tests.integration.bios_emulator"])
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["clusters"][0]["node_groups"].append({
        "name": "hw-nodes", "prefix": "hwn", "count": 2, "cpu": {"arch": "x86_64", "cores": 8}, "memory_gb": 16,
        "hw_profile": "sushy-test", "bmc": {"protocol": "redfish", "address": url, "system": "{node}"}})
    path = work / "site.yaml"
    path.write_text(yaml.safe_dump(data))
    yield path
    assert stop_pid(pid, "bios_emulator")  # (its command line names the launcher, not sushy-emulator)


def hw(*args: str):
    return CliRunner().invoke(main, ["hw", *args], env={"PYTHONPATH": str(REPO)})


def reboot(bios: RedfishBios, node: str) -> None:
    assert bios.suspend([node]).ok
    deadline = time.monotonic() + 30
    while bios.power_state(node) != "Off":
        assert time.monotonic() < deadline
        time.sleep(0.5)
    assert bios.resume([node]).ok
    while bios.power_state(node) != "On":
        assert time.monotonic() < deadline + 30
        time.sleep(0.5)


def test_profile_is_applied_pending_then_current_after_reboot_and_drift_is_found(site_file):
    bios = RedfishBios(targets_from_site(load_site(site_file)))
    res = hw("audit", "--site", str(site_file), "--json", "hwn1")
    assert res.exit_code == 1 and json.loads(res.output)["nodes"][0]["drift"] == ["ProcTurboMode"], res.output
    res = hw("apply", "--site", str(site_file), "--json", "hwn1")
    assert res.exit_code == 0, res.output
    row = json.loads(res.output)["nodes"][0]
    assert row["patched"] == {"ProcTurboMode": "Enabled"} and row["pending"] == ["ProcTurboMode"]
    current, pending = bios.read("hwn1")
    assert current["ProcTurboMode"] == "Disabled" and pending["ProcTurboMode"] == "Enabled"  # until the reboot
    reboot(bios, "hwn1")
    current, _ = bios.read("hwn1")
    assert current["ProcTurboMode"] == "Enabled"  # read back after the reboot: applied
    res = hw("audit", "--site", str(site_file), "hwn1")
    assert res.exit_code == 0 and "ok" in res.output, res.output
    bios.patch("hwn1", {"ProcTurboMode": "Disabled"})  # someone changes it at the BMC
    reboot(bios, "hwn1")
    res = hw("audit", "--site", str(site_file), "--json")
    rows = {r["node"]: r for r in json.loads(res.output)["nodes"]}
    assert res.exit_code == 1 and rows["hwn1"]["drift"] == ["ProcTurboMode"] and rows["hwn2"]["drift"] == ["ProcTurboMode"]
