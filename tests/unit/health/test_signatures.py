"""The fault signature library: every signature against its own lines, the validator, the loader's errors, a
corpus replay of lines in the vendors' documented formats, and the CLI's JSON shapes."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.health.classify import classify_lines
from slurm_plugin.health.signatures import ACTIONS, SignatureError, load_file, load_library, parse_json_line
from slurm_plugin.health.validate import coverage, problems

LIB = load_library()
HERE = Path(__file__).parent
SAFE = {"ignore", "count"}  # what a benign line may get: nothing drained, nothing requeued


def test_library_size_and_vendors():
    assert len(LIB) >= 300
    vendors = coverage(LIB)["vendors"]
    for v in ("nvidia", "amd", "intel", "huawei", "nvidia-networking", "x86", "pci-sig", "nvme", "ipmi", "redfish"):
        assert vendors[v]["signatures"] > 0, v
    assert all(s.source for s in LIB.signatures)


def test_library_has_no_problems():
    assert problems(LIB) == []


@pytest.mark.parametrize("sig", LIB.signatures, ids=lambda s: s.id)
def test_every_signature_matches_its_example_and_not_its_counterexample(sig):
    assert LIB.classify(sig.example) is sig
    assert not sig.matches(sig.counterexample)


def _write(tmp_path, name, text):
    d = tmp_path / "lib"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)
    return d


ENTRY = """
  - id: {id}
    subsystem: gpu
    match: {{regex: '{regex}'}}
    fault_class: gpu_lost
    severity: critical
    action: drain
    example: '{ex}'
    counterexample: 'nothing here'
"""


def test_validator_finds_overlap_unreachable_and_duplicates(tmp_path):
    head = "version: 1\nvendor: t\nsource: {name: doc}\nsignatures:"
    d = _write(tmp_path, "t.yaml", head
               + ENTRY.format(id="xa", regex="Xid .*: 79,", ex="Xid (x): 79, gone")
               + ENTRY.format(id="xb", regex="79, gone", ex="Xid (y): 79, gone")  # overlaps a
               + ENTRY.format(id="xc", regex="never", ex="some line")  # unreachable
               + ENTRY.format(id="xc", regex="dup", ex="dup line"))
    found = "\n".join(problems(load_library(d)))
    assert "xb: overlaps xa" in found and "xa: overlaps xb" in found
    assert "xc: unreachable" in found
    assert "xc: id used 2 times" in found


@pytest.mark.parametrize("bad, said", [
    ("action: drain", "action: 'explode'"),
    ("severity: critical", "severity: 'dire'"),
    ("match: {regex: 'x'}", "match.regex"),
])
def test_loader_names_file_entry_and_field(tmp_path, bad, said):
    text = "version: 1\nvendor: t\nsource: {name: doc}\nsignatures:" + ENTRY.format(id="xa", regex="x", ex="x")
    text = text.replace(bad, {"action: drain": "action: explode", "severity: critical": "severity: dire",
                              "match: {regex: 'x'}": "match: {regex: '('}"}[bad])
    d = _write(tmp_path, "bad.yaml", text)
    with pytest.raises(SignatureError) as exc:
        load_file(d / "bad.yaml")
    assert str(exc.value).startswith("bad.yaml: signatures[0] (xa): ") and said.split(":")[0] in str(exc.value)


# ------------------------------------------------------------------------------------------ corpus replay

PREFIXES = ["Dec  1 09:14:02 node07 kernel: ", "[ 8123.456789] ", "2026-12-01T09:14:02.123456+00:00 gpu12 kernel: ",
            "kern  :err   : 2026-12-01T09:14:02,145363+00:00 ", ""]
_PREFIX = re.compile(r"^Dec  1 09:14:02 node07 kernel: ")
_PCI = re.compile(r"\b0000:[0-9a-f]{2}:[0-9a-f]{2}\b")


def _variants(line: str, rng: random.Random) -> list[str]:
    """The same documented message as other hosts log it: other log prefixes, PCI addresses, field order."""
    obj = parse_json_line(line)
    if obj is not None:
        items = list(obj.items())
        rng.shuffle(items)
        return [json.dumps(dict(items)), json.dumps({**dict(items), "hostname": "node%02d" % rng.randrange(99)})]
    out = []
    for prefix in PREFIXES:
        body = _PREFIX.sub("", line)
        body = _PCI.sub(lambda _m: "0000:%02x:%02x" % (rng.randrange(256), rng.randrange(32)), body)
        out.append(prefix + body if _PREFIX.match(line) else line)
    return out


def test_corpus_replay_classifies_99_percent_and_never_drains_a_benign_line():
    rng = random.Random(16)
    corpus = [(v, s.id) for s in LIB.signatures for v in _variants(s.example, rng)]
    corpus += [(v, None) for s in LIB.signatures for v in _variants(s.counterexample, rng)
               if LIB.classify(s.counterexample) is None]
    benign = (HERE / "benign.log").read_text().splitlines()
    right = sum(1 for line, want in corpus if (LIB.classify(line) or None) and LIB.classify(line).id == want
                or want is None and LIB.classify(line) is None)
    assert len(corpus) > 2000
    assert right / len(corpus) >= 0.99, f"{right}/{len(corpus)}"
    for line in benign:
        sig = LIB.classify(line)
        assert sig is None or sig.action in SAFE, f"benign line drained by {sig.id}: {line}"


# ------------------------------------------------------------------------------------------ CLI

def test_cli_signatures_json_shape():
    res = CliRunner().invoke(main, ["health", "signatures", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["signatures"]
    assert len(rows) == len(LIB)
    assert set(rows[0]) >= {"id", "vendor", "subsystem", "severity", "action", "source"}
    assert {r["action"] for r in rows} <= set(ACTIONS)


def test_cli_classify_json_shape(tmp_path):
    f = tmp_path / "kern.log"
    f.write_text("Dec  1 09:14:02 node07 kernel: Linux version 6.1.0\n"
                 "Dec  1 09:14:02 node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
                 "   7 | 12/01/2026 | 09:14:02 | Memory #0x53 | Uncorrectable ECC | Asserted\n")
    res = CliRunner().invoke(main, ["health", "classify", str(f), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == {"lines": [
        {"line_no": 2, "signature": "nvidia-xid-79", "fault_class": "gpu_lost", "severity": "critical",
         "action": "drain_reboot"},
        {"line_no": 3, "signature": "ipmi-sel-memory-uncorrectable-ecc", "fault_class": "memory_uncorrected",
         "severity": "critical", "action": "replace"}]}


def test_classify_lines_skips_non_matching():
    assert classify_lines(LIB, ["hello", "world"]) == []


def test_classify_all_is_the_first_match_in_library_order():
    """The literal scan and the per-literal alternations change the cost, never the answer: every line of a
    synthetic week (benign vendor lines, every example and counterexample, indented and JSON lines) gets the
    signature a plain walk over the whole library in order gives."""
    from slurm_plugin.health.weeklog import week_lines

    examples = [s.example for s in LIB.signatures] + [s.counterexample for s in LIB.signatures]
    lines = week_lines(lines=3000, vendor_share=0.7, fault_lines=tuple(examples), faults=300) + examples + \
        ["  " + e for e in examples] + (HERE / "benign.log").read_text().splitlines() + ["", "{", "AER AER"]
    random.Random(3).shuffle(lines)
    naive = [(i, s) for i, line in enumerate(lines)
             if (s := next((s for s in LIB.signatures if s.matches(line)), None)) is not None]
    assert LIB.classify_all(lines) == naive
    assert [(i, s) for i, line in enumerate(lines) if (s := LIB.classify(line)) is not None] == naive


def test_literal_scan_finds_overlapping_and_nested_literals(tmp_path):
    from slurm_plugin.health.signatures import _literal_scanner

    scanner, within, overlapping = _literal_scanner(["AER", "ERROR", "RROR x", "Machine check", "check"])
    line = "xx AERROR x Machine check"
    found = set()
    for m in scanner.finditer(line):
        found |= within[m.group()]
        found.update(q for q in overlapping[m.group()] if q in line)
    assert found == {"AER", "ERROR", "RROR x", "Machine check", "check"}


def test_classify_all_finds_every_literal_nested_overlapping_or_repeated():
    """Literals found by the trie scan and those found by a substring search each (lower-case first letter) may
    nest in, overlap with or repeat in one another on a line: with one signature per literal that matches
    whenever its literal is there (in three library orders, so that each literal is sometimes the first),
    classify_all must give each line the first signature in library order whose literal it contains, exactly as
    classify and a plain walk do."""
    from slurm_plugin.health.signatures import Library, Signature

    literals = ["AER", "ERROR", "RROR x", "Machine check", "check", "mce", "mcelog", "log AER", "nvme", "e AER",
                "AERR", "checker", "x nvme", "{"]
    joins = [a + b for a in literals for b in literals] + [a + " " + b + a for a in literals for b in literals]
    joins += [a + b[k:] for a in literals for b in literals for k in range(1, len(b)) if a.endswith(b[:k])]
    lines = joins + ["", "plain text", '{"a": 1}', "  {not json AER"]
    random.Random(5).shuffle(lines)
    shuffled = random.Random(6).sample(literals, len(literals))
    for order in (literals, literals[::-1], shuffled):
        lib = Library(Signature(id=f"s{i}", vendor="t", subsystem="t", fault_class="t", severity="info",
                                action="ignore", source="t", example=p, counterexample="-",
                                regex=re.compile(re.escape(p)), prefilter=p) for i, p in enumerate(order))
        naive = [(i, s) for i, line in enumerate(lines)
                 if (s := next((s for s in lib.signatures if s.matches(line)), None)) is not None]
        assert lib.classify_all(lines) == naive
        assert [(i, s) for i, line in enumerate(lines) if (s := lib.classify(line)) is not None] == naive
        assert lib._solo and lib._literals[1]  # both ways of finding literals took part
