"""Persist :class:`~slurm_plugin.scale.planner.ScaleMemory` between cycles (JSON, crash-safe replace).

The file is validated on load, field by field: a file that is not JSON or has a wrong type anywhere (e.g.
``"last_t": "now"``) is moved aside as ``<name>.bad-<UTC time>`` with a warning naming the field, and the
cycle starts from fresh memory, so one bad file never makes ``cycle run`` crash-loop (issue 11 item 5).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
import os
from pathlib import Path
from typing import Optional

from ..fsio import write_file_atomic
from .pid import PidState
from .planner import ScaleMemory
from .power_state import Change, Event, NodePower, Power

log = logging.getLogger(__name__)


@functools.cache
def _schema():
    """The file's pydantic model (built on first use: importing this module does not load pydantic)."""
    from pydantic import BaseModel, ConfigDict

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

    class Pid(Strict):
        integral: float
        last_error: Optional[float]

    class ChangeIn(Strict):
        t: float
        frm: Power
        to: Power
        event: Event
        cause: str

    class Record(Strict):
        state: Power
        since: float
        failures: int = 0
        last_error: str = ""
        history: list[ChangeIn] = []

    class Memory(Strict):
        idle_since: dict[str, float]
        pid: dict[str, Pid]
        last_t: Optional[float]
        power: dict[str, Record] = {}
        booting_since: Optional[dict[str, float]] = None  # files before the power records: read, then dropped

    return Memory


def _from_file(data) -> ScaleMemory:
    power = {name: NodePower(name, r.state, r.since, tuple(Change(c.t, c.frm, c.to, c.event, c.cause)
                                                           for c in r.history), r.failures, r.last_error)
             for name, r in data.power.items()}
    return ScaleMemory(idle_since=dict(data.idle_since), pid={k: PidState(v.integral, v.last_error)
                                                              for k, v in data.pid.items()},
                       last_t=data.last_t, power=power)


def _move_aside(path: Path, why: str) -> None:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    bad = path.with_name(f"{path.name}.bad-{stamp}")
    try:
        os.replace(path, bad)
        log.warning("scale memory %s is invalid (%s): moved aside to %s, starting fresh", path, why, bad)
    except OSError as err:
        log.warning("scale memory %s is invalid (%s) and could not be moved aside (%s): starting fresh",
                    path, why, err)


def load_memory(path: Path, move_aside: bool = True) -> ScaleMemory:
    """The saved memory; a fresh one if the file is missing, unreadable or invalid (then moved aside, unless
    ``move_aside`` is False: readers such as ``why`` leave the file to the cycle)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return ScaleMemory()
    except (OSError, UnicodeDecodeError) as err:
        log.warning("scale memory %s unreadable (%s): starting fresh", path, err)
        return ScaleMemory()
    from pydantic import ValidationError

    try:
        return _from_file(_schema().model_validate_json(text))
    except ValidationError as err:  # not JSON, or a wrong type anywhere
        if move_aside:
            _move_aside(path, _explain(err))
        else:
            log.warning("scale memory %s is invalid (%s)", path, _explain(err))
        return ScaleMemory()


def describe_power(path: Path, node: str) -> list[str]:
    """Lines for ``hetsched why node``: the node's power record (state, since, failures, last error) and its
    history, oldest first; [] if the planner keeps no record of it."""
    rec = load_memory(path, move_aside=False).power.get(node)
    if rec is None:
        return []

    def when(t: float) -> str:
        return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    head = f"{rec.state.value} since {when(rec.since)}"
    if rec.failures:
        head += f"; {rec.failures} failed power-up(s) in a row, last: {rec.last_error}"
    return [head] + [f"  {when(c.t)} {c.frm.value} -> {c.to.value} ({c.event.value}): {c.cause}"
                     for c in rec.history]


def _explain(err) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'file'}: {e['msg']}" for e in err.errors()[:5])


def save_memory(path: Path, memory: ScaleMemory) -> None:
    power = {name: {"state": r.state.value, "since": r.since, "failures": r.failures, "last_error": r.last_error,
                    "history": [{"t": c.t, "frm": c.frm.value, "to": c.to.value, "event": c.event.value,
                                 "cause": c.cause} for c in r.history]}
             for name, r in memory.power.items()}
    data = {"idle_since": memory.idle_since, "last_t": memory.last_t, "power": power,
            "pid": {k: {"integral": v.integral, "last_error": v.last_error} for k, v in memory.pid.items()}}
    write_file_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
