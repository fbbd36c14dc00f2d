"""``hetsched decisions``: the journal's decisions by time, node, job, kind, cause and outcome (through the
SQLite index, and the same by a scan without it), with the inputs the cycle journaled."""

from __future__ import annotations

import json
import sqlite3

import click
import pytest
from click.testing import CliRunner

from slurm_plugin.cli.decisions import decisions, parse_when
from slurm_plugin.decision import Cause, Journal, PowerNodes, SetSiteFactor
from slurm_plugin.decision.journal import DecisionFilter

NOW = 1_800_000_000.0


@pytest.fixture
def journal(tmp_path):
    j = Journal(tmp_path / "journal.jsonl")
    inputs = {"cycle": 1, "source": "rank:multifactor+power", "pending_jobs": 3}
    j.record(PowerNodes(("armn1", "armn2"), "POWER_DOWN", "idle 600 s", Cause.IDLE_GRACE), True, now=NOW - 7200,
             inputs=inputs)
    j.record(SetSiteFactor((5, 6), 8000, "band 2", Cause.RANKING), True, now=NOW - 1800, inputs=inputs)
    j.record(PowerNodes(("gpun1",), "POWER_UP", "2 jobs wait", Cause.BACKLOG), False, "boom", now=NOW - 60)
    return j


def run(journal: Journal, *args: str) -> tuple[int, str]:
    out = CliRunner().invoke(decisions, ["--journal", str(journal.path), *args])
    return out.exit_code, out.output


@pytest.mark.parametrize("where, reasons", [
    (DecisionFilter(), ["idle 600 s", "band 2", "2 jobs wait"]),
    (DecisionFilter(since=NOW - 3600), ["band 2", "2 jobs wait"]),
    (DecisionFilter(until=NOW - 3600), ["idle 600 s"]),
    (DecisionFilter(node="armn2"), ["idle 600 s"]),
    (DecisionFilter(job=6), ["band 2"]),
    (DecisionFilter(kind="power"), ["idle 600 s", "2 jobs wait"]),
    (DecisionFilter(cause="BACKLOG"), ["2 jobs wait"]),
    (DecisionFilter(failed=True), ["2 jobs wait"]),
    (DecisionFilter(limit=2), ["band 2", "2 jobs wait"]),
    (DecisionFilter(kind="power", limit=1), ["2 jobs wait"]),
])
def test_index_and_scan_select_the_same(journal, where, reasons, monkeypatch):
    assert [e["reason"] for e in journal.decisions(where)] == reasons
    assert [e["reason"] for e in journal.entries() if where.matches(e)][-(where.limit or 99):] == reasons


def test_cli_table_json_and_exit_codes(journal, monkeypatch):
    monkeypatch.setattr("slurm_plugin.cli.decisions.time.time", lambda: NOW)
    code, out = run(journal, "--since", "1h")
    assert code == 0 and len(out.splitlines()) == 2, out
    assert "site_factor" in out and "5,6" in out and "FAILED" in out and "[FAILED (boom)]" in out
    code, out = run(journal, "--node", "armn1", "--json")
    [entry] = json.loads(out)
    assert entry["inputs"]["source"] == "rank:multifactor+power" and entry["cause"] == "IDLE_GRACE"
    code, out = run(journal, "--kind", "policy")
    assert code == 1 and "no decision" in out
    code, out = run(journal, "--since", "yesterday")
    assert code == 2 and "--since" in out


def test_an_index_of_the_old_schema_is_rebuilt(journal):
    index = journal.path.with_name(journal.path.name + ".index.sqlite")
    index.unlink(missing_ok=True)
    with sqlite3.connect(index) as db:  # the version-1 index: no entries table, user_version 0
        db.executescript("CREATE TABLE files (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, inode INTEGER NOT "
                         "NULL, offset INTEGER NOT NULL); CREATE TABLE jobs (job INTEGER, file INTEGER, offset INTEGER);"
                         "CREATE TABLE nodes (node TEXT, file INTEGER, offset INTEGER);")
        st = journal.path.stat()  # ... which claims the whole file is indexed
        db.execute("INSERT INTO files VALUES (1, 'journal.jsonl', ?, ?)", (st.st_ino, st.st_size))
    assert [e["reason"] for e in journal.decisions(DecisionFilter(kind="power"))] == ["idle 600 s", "2 jobs wait"]
    assert [e["reason"] for e in journal.about_node("gpun1")] == ["2 jobs wait"]


@pytest.mark.parametrize("text, expected", [("30m", NOW - 1800), ("1h", NOW - 3600), ("2d", NOW - 172800),
                                            ("2027-01-15T08:00:00Z", 1800000000.0),
                                            ("2027-01-15T09:00:00+01:00", 1800000000.0)])
def test_parse_when(text, expected):
    assert parse_when(text, NOW, "--since") == expected


def test_parse_when_refuses():
    with pytest.raises(click.BadParameter, match="duration"):
        parse_when("soon", NOW, "--since")
