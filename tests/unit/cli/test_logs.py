"""Operators' logs: journald's form under systemd (priority prefix, no second timestamp), JSON with the
structured fields, plain text otherwise - checked on the real command's stderr."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

from slurm_plugin.cli.logs import JournalFormatter, JsonFormatter, priority


def record(level: int = logging.WARNING, msg: str = "power up failed", **extra) -> logging.LogRecord:
    rec = logging.LogRecord("slurm_plugin.x", level, __file__, 1, msg, (), None)
    rec.__dict__.update(extra)
    return rec


def test_priorities():
    assert [priority(lvl) for lvl in (10, 20, 25, 30, 40, 50)] == [7, 6, 6, 4, 3, 2]


def test_journal_lines_carry_priority_and_fields_not_a_timestamp():
    line = JournalFormatter().format(record(node="gpun1", action="power", reason="2 jobs wait"))
    assert line == '<4>slurm_plugin.x: power up failed node=gpun1 action=power reason="2 jobs wait"'
    try:
        raise ValueError("boom")
    except ValueError:
        rec = record(logging.ERROR, "cycle failed")
        rec.exc_info = sys.exc_info()
    lines = JournalFormatter().format(rec).splitlines()
    assert len(lines) > 2 and all(x.startswith("<3>") for x in lines) and lines[-1] == "<3>ValueError: boom"


def test_json_records_keep_the_fields():
    doc = json.loads(JsonFormatter().format(record(job=42, cause="PACKING")))
    assert (doc["level"], doc["logger"], doc["message"], doc["job"], doc["cause"]) == (
        "WARNING", "slurm_plugin.x", "power up failed", 42, "PACKING")
    assert doc["ts"].endswith("+00:00")


def _stderr_of_a_real_command(tmp_path, **env) -> str:
    """`hetsched -v decisions` on a journal in a missing directory logs (INFO) that its index is unavailable."""
    err = tmp_path / "stderr"
    with open(err, "w") as fh:
        st = os.fstat(fh.fileno())
        env = {k: v.format(stream=f"{st.st_dev}:{st.st_ino}") for k, v in env.items()}
        subprocess.run([sys.executable, "-m", "slurm_plugin", "-v", "decisions", "--journal",
                        str(tmp_path / "missing" / "journal.jsonl")], stderr=fh, stdout=subprocess.DEVNULL,
                       env={**os.environ, **env}, timeout=60)
    return [x for x in err.read_text().splitlines() if "journal index unavailable" in x][0]


def test_under_systemd_the_journal_form_is_chosen(tmp_path):
    assert _stderr_of_a_real_command(tmp_path, JOURNAL_STREAM="{stream}").startswith(
        "<6>slurm_plugin.decision.journal: journal index unavailable")
    assert _stderr_of_a_real_command(tmp_path, JOURNAL_STREAM="1:2")[:4].isdigit()  # another stream: text, dated
    doc = json.loads(_stderr_of_a_real_command(tmp_path, HETSCHED_LOG_FORMAT="json"))
    assert doc["level"] == "INFO" and doc["logger"] == "slurm_plugin.decision.journal"
