"""The cycle's own state and its loop: a bad state file is moved aside (never a crash loop), and the loop
survives any exception in a cycle, counting it and backing off up to a cap."""

from __future__ import annotations

import json
import logging
import threading

import pytest

from slurm_plugin.cycle.runner import CycleRunner
from slurm_plugin.cycle.state import CycleState, backoff_s, load_cycle_state, save_cycle_state


@pytest.mark.parametrize("text", ['{"cycles": "now"}', '{"last_ok_t": "now"}', "[1]", "{", '{"cycles": -1}',
                                  '{"surprise": 1}', "\x00\x01"])
def test_a_bad_state_file_is_moved_aside_with_a_warning(tmp_path, caplog, text):
    path = tmp_path / "cycle-state.json"
    path.write_text(text)
    with caplog.at_level(logging.WARNING):
        assert load_cycle_state(path) == CycleState()
    [moved] = list(tmp_path.glob("cycle-state.json.bad-*"))
    assert moved.read_text() == text and not path.exists()
    assert "moved aside" in caplog.text and str(moved) in caplog.text


def test_state_round_trip(tmp_path):
    path = tmp_path / "s.json"
    state = CycleState().failed("boom").succeeded(5.0).failed("again")
    save_cycle_state(path, state)
    assert load_cycle_state(path) == state
    assert state.cycles == 3 and state.failures == 2 and state.consecutive_failures == 1 and state.last_ok_t == 5.0


def test_backoff_doubles_and_is_capped():
    assert [backoff_s(30, n, 600) for n in range(7)] == [30, 60, 120, 240, 480, 600, 600]
    assert backoff_s(900, 3, 600) == 900  # never shorter than the interval itself


class _Flaky(CycleRunner):
    """A runner whose cycles raise what a real one met (a TypeError from a bad memory file, an OSError),
    then succeed; it stops the loop after ``total`` cycles. No Slurm involved: this is the loop's logic."""

    def __init__(self, state_dir, errors, stop, total):
        self.state_dir, self.state_file, self.dry_run = state_dir, state_dir / "cycle-state.json", False
        self.state, self.errors, self.stop, self.total, self.calls = CycleState(), list(errors), stop, total, 0

    def run_once(self, now=None):
        self.calls += 1
        if self.calls >= self.total:
            self.stop.set()
        if self.errors:
            err = self.errors.pop(0)
            self._remember(lambda s: s.failed(str(err)))
            raise err
        self._remember(lambda s: s.succeeded(1.0))
        return None, []


def test_the_loop_survives_any_exception_and_backs_off(tmp_path, caplog, monkeypatch):
    waits = []
    stop = threading.Event()
    monkeypatch.setattr(stop, "wait", lambda s: waits.append(s))
    runner = _Flaky(tmp_path, [TypeError("'<' not supported between 'str' and 'float'"), OSError("disk"),
                               KeyError("x")], stop, total=5)
    with caplog.at_level(logging.ERROR):
        state = runner.run_forever(stop, interval=10, max_backoff=25)
    assert runner.calls == 5 and waits == [20, 25, 25, 10, 10]
    assert state.failures == 3 and state.consecutive_failures == 0 and state.cycles == 5
    assert "Traceback" in caplog.text and "TypeError" in caplog.text  # logged with the traceback
    assert json.loads((tmp_path / "cycle-state.json").read_text())["failures"] == 3
