"""The planner's memory file: round trip, and a bad file moved aside with a warning instead of a crash loop."""

from __future__ import annotations

import json
import logging

import pytest

from slurm_plugin.scale.memory_store import describe_power, load_memory, save_memory
from slurm_plugin.scale.pid import PidState
from slurm_plugin.scale.planner import ScaleMemory
from slurm_plugin.scale.power_state import Event, NodePower, Power

GOOD = {"idle_since": {"armn1": 5.0}, "pid": {"cpu-arm": {"integral": 0.5, "last_error": None}}, "last_t": 9}


def test_round_trip_keeps_power_records_with_history(tmp_path):
    rec = NodePower("rvn1", Power.OFF, 1.0).apply(Event.REQUEST_UP, 2.0, "BACKLOG: 1 job")
    rec = rec.apply(Event.TIMED_OUT, 30.0, "ResumeTimeout reached")
    memory = ScaleMemory({"armn1": 5.0}, {"cpu-arm": PidState(0.5, None)}, 9.0, {"rvn1": rec})
    save_memory(tmp_path / "m.json", memory)
    assert load_memory(tmp_path / "m.json") == memory


def test_a_file_from_before_the_power_records_still_loads(tmp_path):
    (tmp_path / "m.json").write_text(json.dumps({**GOOD, "booting_since": {"rvn1": 3.0}}))
    assert load_memory(tmp_path / "m.json").idle_since == {"armn1": 5.0}


@pytest.mark.parametrize("bad,field", [
    ({**GOOD, "last_t": "now"}, "last_t"),
    ({**GOOD, "idle_since": {"armn1": "yesterday"}}, "idle_since.armn1"),
    ({**GOOD, "power": {"rvn1": {"state": "exploded", "since": 1.0}}}, "power.rvn1.state"),
    ({**GOOD, "power": {"rvn1": {"state": "off", "since": 1.0, "failures": "many"}}}, "power.rvn1.failures"),
    ({**GOOD, "surprise": 1}, "surprise"),
    ("{not json", "file"),
])
def test_a_bad_file_is_moved_aside_and_the_cycle_starts_fresh(tmp_path, caplog, bad, field):
    path = tmp_path / "scale-memory.json"
    path.write_text(bad if isinstance(bad, str) else json.dumps(bad))
    with caplog.at_level(logging.WARNING):
        assert load_memory(path) == ScaleMemory()
    (aside,) = tmp_path.glob("scale-memory.json.bad-*")
    assert not path.exists() and aside.read_text() == (bad if isinstance(bad, str) else json.dumps(bad))
    assert f"({field}:" in caplog.text and "moved aside" in caplog.text
    save_memory(path, ScaleMemory())  # the next cycle writes a good file again
    assert load_memory(path) == ScaleMemory()


def test_why_lines_show_the_record_and_history_and_leave_a_bad_file_alone(tmp_path):
    rec = NodePower("rvn1", Power.POWERING_UP, 0.0).apply(Event.TIMED_OUT, 60.0, "ResumeTimeout reached")
    save_memory(tmp_path / "m.json", ScaleMemory(power={"rvn1": rec}))
    lines = describe_power(tmp_path / "m.json", "rvn1")
    assert lines == ["failed since 1970-01-01T00:01:00Z; 1 failed power-up(s) in a row, last: ResumeTimeout reached",
                     "  1970-01-01T00:01:00Z powering_up -> failed (timed_out): ResumeTimeout reached"]
    assert describe_power(tmp_path / "m.json", "armn1") == []
    (tmp_path / "m.json").write_text("{bad")
    assert describe_power(tmp_path / "m.json", "rvn1") == [] and (tmp_path / "m.json").exists()
