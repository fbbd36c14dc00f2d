"""Append-only JSON-lines journal of applied actions: the memory behind ``hetsched why``.

Files: the active ``journal.jsonl`` and its rotated predecessors ``journal.jsonl.<UTC time>`` (the newest
``keep`` are kept). A line is one JSON object ``{"t": unix time, "ok": bool, "error": str, **action}`` (plus
``failed_ids`` when a batched job update failed for some ids only, ``deferred_ids`` for the jobs the apply budget
left for the next cycle, and ``inputs``: what the cycle decided from,
e.g. ``{"cycle": 12, "snapshot_t": ..., "source": "rank:dqn+power", "pending_jobs": 40, "nodes": 10}``). Lines that are not such an object (a torn
write, a corrupt disk block, a hand edit) are skipped with one warning per file, never raised.
``about_job``/``about_node`` use the SQLite index beside the journal (:mod:`.journal_index`) when it can be
opened, and read every file otherwise.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..fsio import fsync_dir
from .actions import Action

log = logging.getLogger(__name__)

MAX_BYTES = 64 << 20  # rotate the active file beyond this size ...
MAX_AGE_S = 30 * 86400.0  # ... or when its first entry is older than this
KEEP = 8  # rotated files kept (oldest removed first)


def parse_line(line: bytes | str) -> dict | None:
    """The entry on one journal line, or None if it is not a JSON object with a numeric ``t``."""
    try:
        entry = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(entry, dict) or isinstance(entry.get("t"), bool) or not isinstance(entry.get("t"), (int, float)):
        return None
    return entry


@dataclasses.dataclass(frozen=True)
class DecisionFilter:
    """Which journal entries ``hetsched decisions`` lists: times as Unix seconds (inclusive), ``failed`` only
    those not applied in full, ``limit`` the newest that many (None: all)."""

    since: float | None = None
    until: float | None = None
    job: int | None = None
    node: str | None = None
    kind: str | None = None
    cause: str | None = None
    failed: bool = False
    limit: int | None = None

    def matches(self, entry: dict) -> bool:
        """The same selection on one entry (the scan when the index cannot be used)."""
        ids, nodes = entry_refs(entry)
        t = float(entry["t"])
        return ((self.since is None or t >= self.since) and (self.until is None or t <= self.until)
                and (self.job is None or self.job in ids) and (self.node is None or self.node in nodes)
                and (self.kind is None or entry.get("kind") == self.kind)
                and (self.cause is None or entry.get("cause") == self.cause)
                and (not self.failed or entry.get("ok") is not True))


def entry_refs(entry: dict) -> tuple[list[int], list[str]]:
    """The job ids and node names an entry is about (what ``about_job``/``about_node`` look up)."""
    ids = [entry.get("job_id")]
    if isinstance(entry.get("job_ids"), (list, tuple)):
        ids += entry["job_ids"]
    nodes = entry.get("nodes") if isinstance(entry.get("nodes"), (list, tuple)) else ()
    return ([i for i in ids if isinstance(i, int) and not isinstance(i, bool)],
            [n for n in nodes if isinstance(n, str)])


class Journal:
    """The journal at ``path`` (see the module doc). ``record`` is for the one writer (the cycle holds the
    state lock); any number of readers may call ``entries``/``about_*`` at the same time.

    Each line is written with a single ``write`` on an ``O_APPEND`` descriptor and fsynced, so a crash loses at
    most the line being written, and a torn last line is closed before the next one is appended."""

    def __init__(self, path: str | Path, max_bytes: int = MAX_BYTES, max_age_s: float = MAX_AGE_S,
                 keep: int = KEEP):
        self.path = Path(path)
        self.max_bytes, self.max_age_s, self.keep = max_bytes, max_age_s, keep

    # --- writing ------------------------------------------------------------------------------------------
    def record(self, action: Action, ok: bool, error: str = "", now: float | None = None,
               failed_ids: dict[int, str] | None = None, inputs: dict | None = None,
               deferred_ids: tuple[int, ...] = ()) -> None:
        now = now if now is not None else time.time()
        entry = {"t": now, "ok": ok, "error": error, **dataclasses.asdict(action)}
        if failed_ids:
            entry["failed_ids"] = {str(k): v for k, v in failed_ids.items()}
        if deferred_ids:
            entry["deferred_ids"] = list(deferred_ids)
        if inputs:
            entry["inputs"] = inputs
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._rotate_if_due(now)
        line = (json.dumps(entry, sort_keys=True) + "\n").encode()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line  # close a line torn by a crash, or it would swallow this one
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        if not size:
            fsync_dir(self.path.parent)  # a new file: make its directory entry durable too

    def _rotate_if_due(self, now: float) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size >= self.max_bytes or (size and now - self._first_t(now) > self.max_age_s):
            self.rotate(now)

    def _first_t(self, default: float) -> float:
        with open(self.path, "rb") as fh:
            entry = parse_line(fh.readline())
        return float(entry["t"]) if entry else default

    def rotate(self, now: float | None = None) -> Path | None:
        """Rename the active file to ``<name>.<UTC time>`` and remove rotated files beyond ``keep``."""
        if not self.path.exists():
            return None
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now if now is not None else time.time()))
        target = self.path.with_name(f"{self.path.name}.{stamp}")
        n = 1
        while target.exists():
            target, n = self.path.with_name(f"{self.path.name}.{stamp}-{n}"), n + 1
        os.replace(self.path, target)
        for old in self.rotated()[:-self.keep] if self.keep else self.rotated():
            old.unlink(missing_ok=True)
        fsync_dir(self.path.parent)
        log.info("journal rotated to %s", target)
        return target

    # --- reading ------------------------------------------------------------------------------------------
    def rotated(self) -> list[Path]:
        """Rotated files, oldest first (their UTC stamps sort by time)."""
        prefix = self.path.name + "."
        return sorted(p for p in self.path.parent.glob(prefix + "*")
                      if p.name[len(prefix):][:1].isdigit() and p.is_file())

    def files(self) -> list[Path]:
        """Every journal file, oldest first (the active one last, if it exists)."""
        return self.rotated() + ([self.path] if self.path.exists() else [])

    def entries(self) -> Iterator[dict]:
        """Every readable entry, oldest first; bad lines are skipped with one warning per file."""
        for path in self.files():
            yield from read_entries(path)

    def about_job(self, job_id: int) -> list[dict]:
        return self._about("lookup_job", job_id, lambda e: job_id in entry_refs(e)[0])

    def about_node(self, node: str) -> list[dict]:
        return self._about("lookup_node", node, lambda e: node in entry_refs(e)[1])

    def decisions(self, where: DecisionFilter) -> list[dict]:
        """The entries ``where`` selects, oldest first (through the index; every file is read without it)."""
        from .journal_index import JournalIndex, index_unavailable

        try:
            with JournalIndex.beside(self) as index:
                return index.select(where)
        except index_unavailable as err:
            log.info("journal index unavailable (%s): reading %s", err, self.path)
            found = [e for e in self.entries() if where.matches(e)]
            return found[-where.limit:] if where.limit else found

    def _about(self, lookup: str, key: object, matches) -> list[dict]:
        from .journal_index import JournalIndex, index_unavailable

        try:
            with JournalIndex.beside(self) as index:
                return getattr(index, lookup)(key)
        except index_unavailable as err:
            log.info("journal index unavailable (%s): reading %s", err, self.path)
            return [e for e in self.entries() if matches(e)]


def read_entries(path: Path, start: int = 0, offsets: bool = False, stop: int | None = None) -> Iterator:
    """The entries of one file from byte ``start`` to ``stop`` (complete lines only), with their offsets if
    ``offsets``;
    bad lines are counted and reported in one warning naming the file and the first bad line's offset."""
    bad, first_bad = 0, None
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            pos = start
            for raw in fh:
                here, pos = pos, pos + len(raw)
                if stop is not None and pos > stop:
                    break
                if not raw.endswith(b"\n"):
                    break  # being written, or torn by a crash: not an entry (yet)
                entry = parse_line(raw) if raw.strip() else {}
                if entry is None:
                    bad, first_bad = bad + 1, first_bad if first_bad is not None else here
                elif entry:
                    yield (here, entry) if offsets else entry
    except FileNotFoundError:
        return
    if bad:
        log.warning("journal %s: skipped %d unreadable line(s) (first at byte %d)", path, bad, first_bad)


def entries_at(path: Path, positions: Iterable[int]) -> list[dict]:
    """The entries starting at the given byte offsets of ``path`` (unreadable ones left out)."""
    out = []
    with open(path, "rb") as fh:
        for pos in positions:
            fh.seek(pos)
            entry = parse_line(fh.readline())
            if entry is not None:
                out.append(entry)
    return out
