"""The health check's pure decision (case table), its log cursor, and the tool discovery."""

from __future__ import annotations

import os

import pytest
import yaml

from slurm_plugin.decision import DrainNodes
from slurm_plugin.decision.actions import RequeueJobs
from slurm_plugin.decision.applier import commands_for
from slurm_plugin.health.bmc import sel_new_lines
from slurm_plugin.health.check import Hit, Memory, NodeFacts, decide, read_new_lines, tool_records
from slurm_plugin.health.signatures import load_library

LIB = load_library()
XID79 = LIB.by_id["nvidia-xid-79"]
AER_CE = LIB.by_id["pcie-aer-corrected-received"]  # count, 100 per day
EDAC_UE = LIB.by_id["edac-ue"]  # replace
SIGBUS = LIB.by_id["memory-failure-sigbus"]  # requeue
IGNORED = LIB.by_id["nvidia-xid-63"]  # ignore


def facts(state=("IDLE",), reason="", jobs=(), boot=0.0):
    return NodeFacts("gpun1", tuple(state), reason, tuple(jobs), boot)


def hit(sig, t=1000.0):
    return Hit(sig, t, "kern.log", sig.example)


def kinds(decision):
    return [(a.kind, getattr(a, "action", None)) for a in decision.actions]


@pytest.mark.parametrize("case, node, hits, memory, want", [
    ("healthy node: nothing", facts(), [], Memory(), []),
    ("ignored signature: nothing", facts(), [hit(IGNORED)], Memory(), []),
    ("Xid 79 on a busy node: requeue and reboot", facts(("MIXED",), jobs=(7, 8)), [hit(XID79)], Memory(),
     [("requeue", None), ("drain", "REBOOT")]),
    ("correctable AER below threshold: nothing", facts(), [hit(AER_CE)], Memory(counts={AER_CE.id: [900.0] * 50}), []),
    ("correctable AER at threshold: drain", facts(), [hit(AER_CE)], Memory(counts={AER_CE.id: [900.0] * 99}),
     [("drain", "DRAIN")]),
    ("old counts fall out of the window", facts(), [hit(AER_CE, t=200000.0)],
     Memory(counts={AER_CE.id: [900.0] * 99}), []),
    ("SIGBUS: requeue only, node stays", facts(("MIXED",), jobs=(5,)), [hit(SIGBUS)], Memory(), [("requeue", None)]),
    ("admin's drain is left alone", facts(("IDLE", "DRAIN"), reason="bad fan, ticket 42"), [hit(EDAC_UE)], Memory(), []),
])
def test_decide(case, node, hits, memory, want):
    decision, _, _ = decide(node, hits, memory, now=hits[-1].t if hits else 1000.0)
    assert kinds(decision) == want, case


def test_drain_reason_names_the_xid_and_requeues_the_running_jobs():
    decision, mem, _ = decide(facts(("MIXED",), jobs=(7,)), [hit(XID79)], Memory(), now=1000.0)
    requeue, drain = decision.actions
    assert isinstance(requeue, RequeueJobs) and requeue.job_ids == (7,)
    assert isinstance(drain, DrainNodes) and "Xid 79" in drain.reason and drain.reason.startswith("health ")
    assert drain.action == "REBOOT" and mem.drained["action"] == "drain_reboot"
    assert commands_for(drain) == [["scontrol", "reboot", "ASAP", "nextstate=RESUME",
                                    f"reason=hetsched: {drain.reason}", "gpun1"]]
    decision, _, _ = decide(facts(("MIXED",), jobs=(7,)), [hit(XID79)], Memory(), now=1000.0, reboot=False)
    assert kinds(decision) == [("requeue", None), ("drain", "DRAIN")]


def test_a_node_rebooted_by_slurm_is_forgotten_once_back_in_service():
    _, mem, _ = decide(facts(), [hit(XID79)], Memory(), now=1000.0)
    assert facts(("IDLE", "DRAIN", "REBOOT_REQUESTED"), reason=mem.drained["reason"]).skip
    decision, mem, _ = decide(facts(("IDLE",), boot=1500.0), [], mem, now=2000.0)  # nextstate=RESUME did it
    assert decision.actions == () and mem.drained is None


def test_sel_entries_past_the_cursor_and_a_cleared_sel():
    elist = ("SEL has no entries\n   1 |  Pre-Init  |0000036660| Memory #0x53 | Correctable ECC | Asserted\n"
             "   a | 12/01/2026 | 09:14:02 | Temperature #0x30 | Upper Critical going high | Asserted\n")
    lines, newest = sel_new_lines(elist, None)
    assert len(lines) == 2 and newest == 10
    assert sel_new_lines(elist, 1) == ([elist.splitlines()[2]], 10)
    assert sel_new_lines(elist, 10) == ([], 10)
    assert sel_new_lines(elist, 40)[0] == elist.splitlines()[1:]  # newest below the cursor: cleared, read all
    assert LIB.classify(lines[0]).id == "ipmi-sel-memory-correctable-ecc"


def test_own_count_drain_is_resumed_when_the_window_has_passed_but_a_sticky_one_is_not():
    _, mem, _ = decide(facts(), [hit(AER_CE)], Memory(counts={AER_CE.id: [900.0] * 99}), now=1000.0)
    ours = facts(("IDLE", "DRAIN"), reason=mem.drained["reason"])
    decision, _, _ = decide(ours, [], mem, now=1000.0 + 86400 + 1, windows={AER_CE.id: 86400})
    assert kinds(decision) == [("drain", "RESUME")]
    _, mem, _ = decide(facts(), [hit(EDAC_UE)], Memory(), now=1000.0)
    decision, _, _ = decide(facts(("IDLE", "DRAIN"), reason=mem.drained["reason"]), [], mem, now=10 ** 7)
    assert decision.actions == ()


def test_drain_reboot_is_resumed_after_a_reboot_only():
    _, mem, _ = decide(facts(), [hit(XID79)], Memory(), now=1000.0)
    drained = facts(("IDLE", "DRAIN"), reason=mem.drained["reason"], boot=500.0)
    assert decide(drained, [], mem, now=2000.0)[0].actions == ()
    rebooted = facts(("IDLE", "DRAIN"), reason=mem.drained["reason"], boot=1500.0)
    assert kinds(decide(rebooted, [], mem, now=2000.0)[0]) == [("drain", "RESUME")]


@pytest.mark.parametrize("state", [("IDLE", "POWERED_DOWN"), ("IDLE", "POWERING_UP"), ("DOWN", "REBOOT_ISSUED")])
def test_powered_down_and_booting_nodes_are_skipped(state):
    assert facts(state).skip


def test_cursor_reads_only_new_complete_lines_and_restarts_after_rotation(tmp_path):
    log = tmp_path / "kern.log"
    log.write_text("a\nb\npartial")
    lines, cur = read_new_lines([str(log)], {})
    assert [x for _, x in lines] == ["a", "b"]
    with open(log, "a") as f:
        f.write(" line\nc\n")
    lines, cur = read_new_lines([str(log)], cur)
    assert [x for _, x in lines] == ["partial line", "c"]
    os.rename(log, tmp_path / "kern.log.1")
    log.write_text("d\n")
    lines, cur = read_new_lines([str(log), str(tmp_path / "missing.log")], cur)
    assert [x for _, x in lines] == ["d"]


def test_absent_tools_are_skipped_and_present_ones_read(tmp_path):
    records, absent = tool_records(5.0, path=str(tmp_path))
    assert records == [] and "nvidia-smi" in absent
    smi = tmp_path / "nvidia-smi"  # a fake tool directory: what nvidia-smi prints for --format=csv,noheader
    smi.write_text("#!/bin/sh\necho '0, 00000000:3B:00.0, Yes, No, N/A, 0, Not Active, Not Active, Not Active'\n")
    smi.chmod(0o755)
    records, absent = tool_records(5.0, path=str(tmp_path))
    assert "nvidia-smi" not in absent
    (tool, rec), = records
    assert rec["remapped_rows.pending"] == "Yes"
    assert LIB.classify_obj(rec).id == "nvidia-smi-remapped-rows-pending"


def _refuse_site_loads(monkeypatch):
    import slurm_plugin.site as site_pkg

    def refuse(path):
        raise AssertionError("the site was loaded again")

    monkeypatch.setattr(site_pkg, "load_site", refuse)


def test_the_site_is_loaded_once_per_version_for_every_node(tmp_path, monkeypatch):
    """The check's program passes --site; loading it costs ~0.5 CPU s, so each node keeps what it needs (its
    NVIDIA GPU type, its group's BMC settings) in <state-dir>/<node>.site.json until the site file changes; the
    BMC read from those facts reaches the same target as from the site itself."""
    import shutil

    from slurm_plugin.health.site_facts import NodeSite, node_site
    from slurm_plugin.power import ipmi, redfish
    from slurm_plugin.site import SITE_CONFIGS, load_site

    site = tmp_path / "site.yaml"
    shutil.copy(SITE_CONFIGS / "demo.yaml", site)
    state = tmp_path / "state"
    assert node_site(str(site), "gh200n1", state) == NodeSite("h100", None)
    assert node_site(str(site), "x86n1", state) == NodeSite(None, None)
    with monkeypatch.context() as m:
        _refuse_site_loads(m)
        assert node_site(str(site), "gh200n1", state) == NodeSite("h100", None)  # from the cache
        site.write_text(site.read_text() + "\n")  # a changed file is loaded again
        with pytest.raises(AssertionError, match="loaded again"):
            node_site(str(site), "gh200n1", state)
    creds = tmp_path / "bmc.cred"
    creds.write_text("admin:secret\n")
    creds.chmod(0o600)
    data = yaml.safe_load(site.read_text())
    for g in data["clusters"][0]["node_groups"]:
        if g["name"] == "cpu-x86":
            g["bmc"] = {"protocol": "redfish", "address": "http://127.0.0.1:9", "system": "sys-{node}",
                        "credentials_file": str(creds), "verify_tls": False}
        if g["name"] == "gpu-h100":
            g["bmc"] = {"protocol": "ipmi", "address": "{node}-bmc:6230", "credentials_file": str(creds),
                        "cipher_suite": 3}
    site.write_text(yaml.safe_dump(data))
    loaded = load_site(str(site))
    first = {n: node_site(str(site), n, state) for n in ("x86n1", "gh200n1")}
    with monkeypatch.context() as m:
        _refuse_site_loads(m)
        for node, got in first.items():
            assert node_site(str(site), node, state) == got  # a BMC node is cached too
    assert first["x86n1"].bmc.node_groups[0].bmc.credentials_file == str(creds)
    assert "secret" not in (state / "x86n1.site.json").read_text()  # the settings, never the credentials
    assert redfish.targets_from_site(first["x86n1"].bmc, ["x86n1"]) == redfish.targets_from_site(loaded, ["x86n1"])
    assert ipmi.targets_from_site(first["gh200n1"].bmc, ["gh200n1"]) == ipmi.targets_from_site(loaded, ["gh200n1"])
    assert first["gh200n1"].gpu == "h100"


def test_rendered_site_facts_spare_every_load_and_a_stale_file_is_ignored(tmp_path, monkeypatch):
    """`conf render` writes every node's facts (--site-facts): a first run on a new state dir loads nothing; facts
    made from another version of the site are not used."""
    import shutil

    from slurm_plugin.health.site_facts import facts_text, node_site
    from slurm_plugin.site import SITE_CONFIGS, load_site

    site = tmp_path / "site.yaml"
    shutil.copy(SITE_CONFIGS / "demo.yaml", site)
    facts = tmp_path / "site-facts.json"
    facts.write_text(facts_text(load_site(str(site)), site))
    expected = {n: node_site(str(site), n, tmp_path / "probe") for n in ("gh200n1", "x86n1")}
    with monkeypatch.context() as m:
        _refuse_site_loads(m)
        for node, want in expected.items():
            assert node_site(str(site), node, tmp_path / "new", facts) == want
        assert not (tmp_path / "new").exists()
        site.write_text(site.read_text() + "\n")
        with pytest.raises(AssertionError, match="loaded again"):
            node_site(str(site), "x86n1", tmp_path / "new", facts)
    assert node_site(str(site), "x86n1", tmp_path / "new", tmp_path / "missing.json") == expected["x86n1"]
