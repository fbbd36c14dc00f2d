"""What the cycle itself remembers between runs (``cycle-state.json`` in its state directory).

Counters for operators and the loop's back-off: cycles run, failures in all and in a row, the last success and
the last error. Written atomically after every cycle; validated on load (a bad file is moved aside and the
counters start again, see :func:`slurm_plugin.fsio.load_state`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from ..fsio import load_state, state_fields, write_file_atomic


@dataclass(frozen=True)
class CycleState:
    cycles: int = 0
    failures: int = 0
    consecutive_failures: int = 0
    last_ok_t: float | None = None
    last_error: str = ""

    def succeeded(self, now: float) -> CycleState:
        return dataclasses.replace(self, cycles=self.cycles + 1, consecutive_failures=0, last_ok_t=now)

    def failed(self, error: str) -> CycleState:
        return dataclasses.replace(self, cycles=self.cycles + 1, failures=self.failures + 1,
                                   consecutive_failures=self.consecutive_failures + 1, last_error=error[:500])


def _count(data: dict, key: str) -> int:
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{key} must be a count, got {value!r}")
    return value


def parse_cycle_state(data: object) -> CycleState:
    """A :class:`CycleState` from JSON; TypeError/ValueError name the first bad field."""
    data = state_fields(data, CycleState)
    last_ok = data.get("last_ok_t")
    if last_ok is not None and (isinstance(last_ok, bool) or not isinstance(last_ok, (int, float))):
        raise TypeError(f"last_ok_t must be a time, got {last_ok!r}")
    if not isinstance(data.get("last_error", ""), str):
        raise TypeError(f"last_error must be text, got {data['last_error']!r}")
    return CycleState(_count(data, "cycles"), _count(data, "failures"), _count(data, "consecutive_failures"),
                      None if last_ok is None else float(last_ok), data.get("last_error", ""))


def load_cycle_state(path: Path) -> CycleState:
    return load_state(path, parse_cycle_state, CycleState, "cycle state")


def save_cycle_state(path: Path, state: CycleState) -> None:
    write_file_atomic(path, json.dumps(dataclasses.asdict(state), indent=1, sort_keys=True) + "\n")


def backoff_s(interval: float, consecutive_failures: int, cap: float) -> float:
    """Seconds to wait before the next cycle: ``interval`` after a success, doubling with every failure in a
    row, never more than ``max(cap, interval)``."""
    return min(max(cap, interval), interval * 2 ** min(consecutive_failures, 30))
