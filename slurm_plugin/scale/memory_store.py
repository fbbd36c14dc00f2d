"""Persist :class:`~slurm_plugin.scale.planner.ScaleMemory` between cycles (JSON, atomic replace)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..fsio import write_atomic
from .pid import PidState
from .planner import ScaleMemory

log = logging.getLogger(__name__)


def load_memory(path: Path) -> ScaleMemory:
    """The saved memory, or a fresh one (with a log line) if the file is missing or unreadable."""
    try:
        data = json.loads(path.read_text())
        return ScaleMemory(idle_since=dict(data["idle_since"]), booting_since=dict(data["booting_since"]),
                           pid={k: PidState(**v) for k, v in data["pid"].items()}, last_t=data["last_t"])
    except FileNotFoundError:
        return ScaleMemory()
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning("scale memory %s unreadable (%s): starting fresh", path, err)
        return ScaleMemory()


def save_memory(path: Path, memory: ScaleMemory) -> None:
    data = {"idle_since": memory.idle_since, "booting_since": memory.booting_since,
            "pid": {k: {"integral": v.integral, "last_error": v.last_error} for k, v in memory.pid.items()},
            "last_t": memory.last_t}
    write_atomic(path.parent, {path.name: json.dumps(data, indent=1, sort_keys=True) + "\n"})
