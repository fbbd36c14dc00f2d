"""The health check's BMC reads against real emulators: OpenIPMI's ipmi_sim (SEL entries logged through IPMI Add
SEL Entry, read with `ipmitool sel elist` past a cursor) and sushy-tools' Redfish emulator (Status.Health of the
System, Chassis and Thermal members, made to report a fault); a BMC that never answers is given up after the
per-BMC deadline."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import pytest
import yaml

from slurm_plugin.cluster.procs import stop_pid
from slurm_plugin.health.bmc import read_bmc
from slurm_plugin.health.check import Memory, NodeFacts, decide, match_lines, match_records
from slurm_plugin.health.signatures import load_library
from slurm_plugin.power.emulator import start_sushy
from slurm_plugin.site import SITE_CONFIGS, load_site

from .ipmi_bmc import HAVE_IPMI, SKIP_REASON, add_sel_events, bmc_group, start_bmc, write_creds

pytestmark = pytest.mark.integration
LIB = load_library()
MEM_CE = "0x04 0x0c 0x53 0x6f 0x00 0xff 0xff"  # Memory #0x53, sensor-specific: Correctable ECC (offset 0)
MEM_UE = "0x04 0x0c 0x53 0x6f 0x01 0xff 0xff"  # offset 1: Uncorrectable ECC
TEMP_UC = "0x04 0x01 0x30 0x01 0x59 0x00 0x00"  # Temperature #0x30, threshold: Upper Critical going high


def site_with(tmp: Path, group: dict) -> object:
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["clusters"][0]["node_groups"].append(group)
    path = tmp / "site.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_site(path)


def redfish_node(tmp: Path, prefix: str, monkeypatch) -> tuple[int, object, Path, Path]:
    """The health emulator (sushy-tools + faults and event logs) serving node ``<prefix>1``, and a site whose
    group of that one node names it as its Redfish BMC: (emulator pid, site, its faults file, its logs file)."""
    files = tmp / "health.json", tmp / "logs.json"
    for name, f in zip(("HETSCHED_TEST_REDFISH_HEALTH", "HETSCHED_TEST_REDFISH_LOGS"), files):
        f.write_text("{}")
        monkeypatch.setenv(name, str(f))
    pid, url = start_sushy(tmp / "sushy", [f"{prefix}1"], power_state="On",
                           command=[sys.executable, "-m", "tests.integration.health_emulator"])
    return pid, site_with(tmp, {"name": f"rf-{prefix}", "prefix": prefix, "count": 1, "memory_gb": 16,
                                "cpu": {"arch": "x86_64", "cores": 8},
                                "bmc": {"protocol": "redfish", "address": url, "system": "{node}"}}), *files


def ids(hits) -> list[str]:
    return [h.signature.id for h in hits]


@pytest.mark.skipif(not HAVE_IPMI, reason=SKIP_REASON)
def test_ipmi_sel_entries_are_read_past_the_cursor_and_classified(tmp_path):
    pid, port = start_bmc(tmp_path, "seln1", powered=True)
    try:
        site = site_with(tmp_path, bmc_group("sel-nodes", "seln", 1, port, write_creds(tmp_path / "creds")))
        time.sleep(0.5)
        first = read_bmc(site, "seln1", None, timeout=20)
        assert first.error == "" and first.protocol == "ipmi" and first.sel_lines == [], first
        add_sel_events(port, [MEM_CE, TEMP_UC], tmp_path)
        got = read_bmc(site, "seln1", first.sel_cursor, timeout=20)
        assert got.error == "" and len(got.sel_lines) == 2, got
        hits = match_lines(LIB, [("bmc-sel", line) for line in got.sel_lines], 1000.0)
        assert ids(hits) == ["ipmi-sel-memory-correctable-ecc", "ipmi-sel-temperature-upper-critical-going-high"]
        decision, _, _ = decide(NodeFacts("seln1", ("IDLE",)), hits, Memory(), 1000.0)
        assert [(a.kind, a.action) for a in decision.actions] == [("drain", "DRAIN")]
        assert "overtemp" in decision.actions[0].reason
        # the next run sees only what was logged since
        again = read_bmc(site, "seln1", got.sel_cursor, timeout=20)
        assert again.sel_lines == [] and again.sel_cursor == got.sel_cursor
        add_sel_events(port, [MEM_UE], tmp_path)
        last = read_bmc(site, "seln1", got.sel_cursor, timeout=20)
        assert [LIB.classify(line).id for line in last.sel_lines] == ["ipmi-sel-memory-uncorrectable-ecc"]
    finally:
        assert stop_pid(pid, "ipmi_sim")


def test_redfish_health_of_system_chassis_and_thermal_members(tmp_path, monkeypatch):
    pid, site, faults, _ = redfish_node(tmp_path, "rfh", monkeypatch)
    try:
        healthy = read_bmc(site, "rfh1", None, timeout=20)
        assert healthy.error == "" and healthy.protocol == "redfish", healthy
        types = [r.get("@odata.type", r.get("@odata.id", "")) for r in healthy.records]
        assert any("ComputerSystem" in t for t in types) and any("Chassis." in t for t in types)
        assert any("/Thermal#/Temperatures/" in t for t in types) and any("/Thermal#/Fans/" in t for t in types)
        assert [h for h in match_records(LIB, [("redfish", r) for r in healthy.records], 1.0)
                if h.signature.action != "ignore"] == []
        chassis = next(r["@odata.id"] for r in healthy.records if "Chassis." in r.get("@odata.type", ""))
        faults.write_text(json.dumps({chassis: {"Status.Health": "Warning"},
                                      f"{chassis}/Thermal": {"Temperatures.0.Status.Health": "Critical"}}))
        sick = read_bmc(site, "rfh1", None, timeout=20)
        hits = match_records(LIB, [("redfish", r) for r in sick.records], 1000.0)
        assert sorted(ids(hits)) == ["redfish-health-chassis-warning", "redfish-health-thermal-temperatures-critical"]
        decision, _, _ = decide(NodeFacts("rfh1", ("IDLE",)), hits, Memory(), 1000.0)
        assert [(a.kind, a.action) for a in decision.actions] == [("drain", "DRAIN")]
        assert "bmc_temperature_health" in decision.actions[0].reason
    finally:
        assert stop_pid(pid, "health_emulator")


def test_a_bmc_that_never_answers_is_given_up_after_its_deadline(tmp_path):
    with socket.socket() as silent:  # accepts connections (the kernel does), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        site = site_with(tmp_path, {"name": "rf-dead", "prefix": "rfd", "count": 1, "memory_gb": 16,
                                    "cpu": {"arch": "x86_64", "cores": 8},
                                    "bmc": {"protocol": "redfish", "address": url, "system": "{node}"}})
        t0 = time.monotonic()
        got = read_bmc(site, "rfd1", [0, 7], timeout=1.5)
        took = time.monotonic() - t0
    assert "no answer within 1.5 s" in got.error and got.records == [] and got.sel_cursor == [0, 7]
    assert took < 5, took


def _entry(ident: int, created: str, message_id: str, severity: str) -> dict:
    return {"Id": str(ident), "Created": created, "EntryType": "Event", "Severity": severity,
            "MessageId": message_id, "Message": f"{message_id.rsplit('.', 1)[-1]} on DIMM_A1",
            "MessageArgs": ["/redfish/v1/Systems/1/Memory/DIMM_A1"]}


def test_redfish_event_logs_of_the_system_and_its_manager_are_read_past_their_cursors(tmp_path, monkeypatch):
    """Every LogService of the System and of its Manager (the emulator pages Entries two at a time): the first
    read gets every entry, the next only what was added; a Manager log entry over its threshold drains."""
    pid, site, _, logs = redfish_node(tmp_path, "rfl", monkeypatch)
    try:
        empty = read_bmc(site, "rfl1", None, timeout=60)
        assert empty.error == "" and empty.log_entries == [] and empty.log_cursors == {}, empty
        system = empty.records[0]
        manager = system["Links"]["ManagedBy"][0]["@odata.id"]
        ok, exceeded = "ResourceEvent.1.3.0.ResourceStatusChangedOK", "ResourceEvent.1.3.0.ResourceErrorThresholdExceeded"
        logs.write_text(json.dumps({
            system["@odata.id"]: {"EventLog": [_entry(i, f"2026-12-01T10:0{i}:00Z", ok, "OK") for i in (1, 2, 3)]},
            manager: {"SEL": [_entry(7, "2026-12-01T10:05:00+00:00", exceeded, "Critical")]}}))
        first = read_bmc(site, "rfl1", None, timeout=60)
        assert first.error == "", first.error
        assert sorted(e["Id"] for e in first.log_entries) == ["1", "2", "3", "7"]  # three over two pages
        assert sorted(first.log_cursors) == [f"redfish-log:{manager}/LogServices/SEL/Entries",
                                             f"redfish-log:{system['@odata.id']}/LogServices/EventLog/Entries"]
        hits = match_records(LIB, [("redfish-log", e) for e in first.log_entries], 1000.0)
        assert sorted(ids(hits)) == ["redfish-resourceevent-resourceerrorthresholdexceeded"] + \
            ["redfish-resourceevent-resourcestatuschangedok"] * 3
        decision, _, _ = decide(NodeFacts("rfl1", ("IDLE",)), hits, Memory(), 1000.0)
        assert [(a.kind, a.action) for a in decision.actions] == [("drain", "DRAIN")]
        assert "[redfish-resourceevent-resourceerrorthresholdexceeded]" in decision.actions[0].reason
        again = read_bmc(site, "rfl1", None, timeout=60, log_cursors=first.log_cursors)
        assert again.error == "" and again.log_entries == [] and again.log_cursors == first.log_cursors
        doc = json.loads(logs.read_text())
        doc[system["@odata.id"]]["EventLog"].append(_entry(4, "2026-12-01T10:09:00Z", exceeded, "Critical"))
        doc[manager]["SEL"] = [_entry(1, "2026-12-01T09:00:00Z", ok, "OK")]  # cleared, then one new entry
        logs.write_text(json.dumps(doc))
        third = read_bmc(site, "rfl1", None, timeout=60, log_cursors=first.log_cursors)
        assert sorted((e["Id"], e["Created"]) for e in third.log_entries) == \
            [("1", "2026-12-01T09:00:00Z"), ("4", "2026-12-01T10:09:00Z")]
    finally:
        assert stop_pid(pid, "health_emulator")
