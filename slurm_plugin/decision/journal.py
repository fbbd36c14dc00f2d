"""Append-only JSON-lines journal of applied actions: the memory behind ``hetsched why``."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from .actions import Action


class Journal:
    """One JSON object per applied action: ``{"t": unix time, "ok": bool, "error": str, **action}``.

    Each line is written with a single ``write`` on an ``O_APPEND`` descriptor, so concurrent writers never
    interleave within a line and a crash loses at most the line being written.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def record(self, action: Action, ok: bool, error: str = "", now: float | None = None) -> None:
        entry = {"t": now if now is not None else time.time(), "ok": ok, "error": error,
                 **dataclasses.asdict(action)}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(entry, sort_keys=True) + "\n").encode())
        finally:
            os.close(fd)

    def entries(self) -> Iterator[dict]:
        """Every readable entry, oldest first; a torn last line is skipped."""
        try:
            with open(self.path) as fh:
                for line in fh:
                    try:
                        yield json.loads(line)
                    except ValueError:
                        continue
        except FileNotFoundError:
            return

    def about_job(self, job_id: int) -> list[dict]:
        return [e for e in self.entries() if e.get("job_id") == job_id or job_id in e.get("job_ids", ())]

    def about_node(self, node: str) -> list[dict]:
        return [e for e in self.entries() if node in e.get("nodes", ())]
