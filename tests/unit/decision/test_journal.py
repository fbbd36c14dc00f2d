"""The journal: bad lines are skipped with a warning (never a traceback), torn lines never swallow the next
record, files rotate by size and age keeping N, and the SQLite index answers exactly what a full scan does."""

from __future__ import annotations

import logging

from slurm_plugin.decision import Journal, MoveJob, PowerNodes, SetSiteFactor
from slurm_plugin.decision.journal import entry_refs, parse_line


def _fill(j: Journal, n: int, t0: float = 1000.0) -> None:
    for i in range(n):
        j.record(MoveJob(i, "x86", None, f"move {i}"), ok=True, now=t0 + i)
        j.record(PowerNodes((f"n{i % 3}",), "POWER_UP", f"up {i}"), ok=True, now=t0 + i)


def test_bad_lines_are_skipped_with_one_warning(tmp_path, caplog):
    j = Journal(tmp_path / "j.jsonl")
    j.record(MoveJob(5, "x86", None, "free"), ok=True, now=1.0)
    with open(j.path, "ab") as fh:
        fh.write(b'[1, 2]\n{"t": "yesterday", "job_id": 5}\n\xff\xfe garbage\n{"t": 3, "kind": "mo\n')
    j.record(MoveJob(5, "arm", None, "later"), ok=True, now=4.0)
    with caplog.at_level(logging.WARNING):
        assert [e["reason"] for e in j.entries()] == ["free", "later"]
    assert "skipped 4 unreadable line(s)" in caplog.text
    assert [e["reason"] for e in j.about_job(5)] == ["free", "later"]


def test_a_torn_last_line_is_closed_before_the_next_record(tmp_path):
    j = Journal(tmp_path / "j.jsonl")
    j.record(MoveJob(1, "x86", None, "a"), ok=True, now=1.0)
    with open(j.path, "a") as fh:
        fh.write('{"t": 2, "kind": "mo')  # a crash in the middle of a write
    j.record(MoveJob(2, "x86", None, "b"), ok=True, now=3.0)
    assert [e["job_id"] for e in j.entries()] == [1, 2]


def test_rotation_by_size_keeps_the_newest_files(tmp_path):
    j = Journal(tmp_path / "j.jsonl", max_bytes=2000, keep=2)
    _fill(j, 60)
    rotated = j.rotated()
    assert len(rotated) == 2 and all(p.stat().st_size >= 2000 for p in rotated)
    assert j.path.stat().st_size < 2000 + 200
    kept = list(j.entries())
    assert [e["t"] for e in kept] == sorted(e["t"] for e in kept)  # oldest first across files
    assert kept[-1]["reason"] == "up 59" and kept[0]["reason"] != "move 0"  # the oldest file was removed


def test_rotation_by_age(tmp_path):
    j = Journal(tmp_path / "j.jsonl", max_age_s=3600)
    j.record(MoveJob(1, "x86", None, "old"), ok=True, now=0.0)
    j.record(MoveJob(2, "x86", None, "still young"), ok=True, now=1800.0)
    assert j.rotated() == []
    j.record(MoveJob(3, "x86", None, "new"), ok=True, now=7200.0)
    assert len(j.rotated()) == 1 and [e["job_id"] for e in j.entries()] == [1, 2, 3]


def test_index_answers_like_a_scan_and_follows_rotation(tmp_path):
    j = Journal(tmp_path / "j.jsonl", max_bytes=3000, keep=3)
    _fill(j, 20)
    scan = [e for e in j.entries() if "n1" in entry_refs(e)[1]]
    assert j.about_node("n1") == scan and len(scan) == 7
    index = tmp_path / "j.jsonl.index.sqlite"
    assert index.exists()
    _fill(j, 25, t0=5000.0)  # rotates again: indexed lines change file name, the oldest file goes away
    scan = [e for e in j.entries() if "n1" in entry_refs(e)[1]]
    assert j.about_node("n1") == scan and j.about_job(3) == [e for e in j.entries() if e.get("job_id") == 3]


def test_a_corrupt_or_unwritable_index_falls_back_to_a_scan(tmp_path):
    j = Journal(tmp_path / "j.jsonl")
    _fill(j, 5)
    (tmp_path / "j.jsonl.index.sqlite").write_bytes(b"not a database" * 100)
    assert [e["reason"] for e in j.about_job(2)] == ["move 2"]


def test_per_id_failures_are_journaled(tmp_path):
    j = Journal(tmp_path / "j.jsonl")
    j.record(SetSiteFactor((4, 99999, 6), 500, "band 3"), ok=False, error="1 of 3", failed_ids={99999: "gone"})
    [entry] = j.about_job(4)
    assert entry["failed_ids"] == {"99999": "gone"} and j.about_job(99999) == [entry]


def test_parse_line_accepts_only_objects_with_a_time():
    assert parse_line(b'{"t": 1}') == {"t": 1}
    for bad in (b"[]", b'{"t": true}', b'{"x": 1}', b"\xff", b"{", b"1e999999"):
        assert parse_line(bad) is None
