"""Xids read per GPU generation: the Xid catalog's Applies-to columns (A100/H100/B100/GB200) in the library, a Xid
the catalog does not list for the node's generation drains for an admin (CONTACT_SUPPORT), known ones keep their
bucket; `health classify --gpu` and the check's decision use it."""

from __future__ import annotations

import json

from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.health.check import Hit, Memory, NodeFacts, decide
from slurm_plugin.health.generations import COLUMNS, NOT_LISTED, PRE_AMPERE, for_generation, generation
from slurm_plugin.health.signatures import load_library

LIB = load_library()


def xid(code: int) -> str:
    return f"Dec  1 09:14:02 node07 kernel: NVRM: Xid (PCI:0000:3b:00): {code}, pid=1208, name=python3, details"


def test_gpu_types_map_to_the_catalogs_columns():
    assert [generation(t) for t in ("a100", "A100-SXM4-80GB", "h100", "gh200", "h200", "b200", "gb200", "GB300",
                                    "v100", "mi250x", None, "")] == \
        ["a100", "a100", "h100", "h100", "h100", "b100", "gb200", "gb200", PRE_AMPERE, None, None, None]


def test_every_xid_signature_carries_the_catalogs_columns():
    xids = [s for s in LIB.signatures if s.id.startswith("nvidia-xid-")]
    assert len(xids) == 108
    for s in xids:
        assert set(s.extra["applies_to"]) <= set(COLUMNS), s.id
    by = {s.id: s.extra["applies_to"] for s in xids}
    assert by["nvidia-xid-79"] == list(COLUMNS) and by["nvidia-xid-74"] == ["a100", "h100"]
    assert by["nvidia-xid-136"] == ["h100"] and by["nvidia-xid-144"] == ["b100", "gb200"]
    assert by["nvidia-xid-93"] == ["a100"] and by["nvidia-xid-121"] == ["gb200"]


def test_a_xid_keeps_its_bucket_where_listed_and_drains_where_not():
    x93, x136, x79, x80 = (LIB.classify(xid(c)) for c in (93, 136, 79, 80))
    assert for_generation(x93, "a100") is x93 and x93.action == "ignore"  # InfoROM wear limit: A100 only
    on_h100 = for_generation(x93, "h100")
    assert (on_h100.action, on_h100.fault_class, on_h100.severity) == ("drain", NOT_LISTED, "error")
    assert on_h100.extra["name"] == "Xid 93 (not in the catalog for H100)" and on_h100.id == "nvidia-xid-93"
    assert for_generation(x136, "h100").action == "drain_reboot"  # link training: RESET_GPU on H100
    assert for_generation(x136, "a100").fault_class == NOT_LISTED
    assert all(for_generation(x79, g) is x79 for g in COLUMNS)  # fallen off the bus: every generation
    assert x80.action == "count" and for_generation(x80, "b100").action == "drain"  # A100/H100 only
    for gen in (PRE_AMPERE, None, "mi300x"):  # the older catalog / unknown: the library's action
        assert for_generation(x93, gen) is x93


def test_the_checks_decision_names_the_generation_mismatch():
    sig = for_generation(LIB.classify(xid(74)), "gb200")  # NVLink: Blackwell reports Xid 144-150 instead
    decision, _, notes = decide(NodeFacts("gb1", ("IDLE",)), [Hit(sig, 10.0, "kern.log", xid(74))], Memory(), 10.0)
    (drain,) = decision.actions
    assert drain.reason == f"health Xid 74 (not in the catalog for GB200): {NOT_LISTED} (drain) [nvidia-xid-74]"


def test_classify_reads_xids_for_the_gpu_given(tmp_path):
    log = tmp_path / "kern.log"
    log.write_text("\n".join(xid(c) for c in (93, 121, 79)) + "\n")

    def actions(*gpu: str) -> list[tuple[str, str, str]]:
        res = CliRunner().invoke(main, ["health", "classify", str(log), "--json", *gpu])
        assert res.exit_code == 0, res.output
        return [(m["signature"], m["action"], m["fault_class"]) for m in json.loads(res.output)["lines"]]

    assert actions() == actions("--gpu", "v100") == [("nvidia-xid-93", "ignore", "gpu_inforom"),
                                                    ("nvidia-xid-121", "ignore", "gpu_c2c_link"),
                                                    ("nvidia-xid-79", "drain_reboot", "gpu_lost")]
    assert actions("--gpu", "a100") == [("nvidia-xid-93", "ignore", "gpu_inforom"),
                                        ("nvidia-xid-121", "drain", NOT_LISTED),
                                        ("nvidia-xid-79", "drain_reboot", "gpu_lost")]
    assert actions("--gpu", "gb200")[:2] == [("nvidia-xid-93", "drain", NOT_LISTED),
                                             ("nvidia-xid-121", "ignore", "gpu_c2c_link")]
