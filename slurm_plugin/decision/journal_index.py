"""A SQLite index beside the journal (``journal.jsonl.index.sqlite``): key -> (file, byte offset) of its lines.

A cache, never the truth: it can be deleted at any time and is rebuilt from the journal files. Each lookup
first indexes what was appended since the last one (per file: inode and offset reached), follows a rotated
file by its inode (a rename keeps it), and forgets files that were removed; a file that shrank or was replaced
is indexed again from its start. ``why`` on a long journal then reads only the lines it prints.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .journal import Journal, entries_at, entry_keys, read_entries

index_unavailable = (sqlite3.Error, OSError)  # e.g. a read-only state directory: the caller scans instead

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (name TEXT PRIMARY KEY, inode INTEGER NOT NULL, offset INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS refs (key TEXT NOT NULL, name TEXT NOT NULL, offset INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS refs_key ON refs (key);
"""


class JournalIndex:
    def __init__(self, journal: Journal, db: Path):
        self.journal = journal
        self.db = sqlite3.connect(db, timeout=10)
        self.db.executescript(_SCHEMA)

    @classmethod
    def beside(cls, journal: Journal) -> JournalIndex:
        return cls(journal, journal.path.with_name(journal.path.name + ".index.sqlite"))

    def __enter__(self) -> JournalIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.db.close()

    def refresh(self) -> None:
        """Bring the index up to date with the journal files (one transaction)."""
        files = {p.name: p for p in self.journal.files()}
        with self.db:
            known = {name: (inode, offset) for name, inode, offset in self.db.execute("SELECT * FROM files")}
            inodes = {p.stat().st_ino: name for name, p in files.items()}
            for name, (inode, _) in list(known.items()):
                moved_to = inodes.get(inode)
                if moved_to and moved_to != name and moved_to not in known:  # rotated: same inode, new name
                    self.db.execute("UPDATE files SET name = ? WHERE name = ?", (moved_to, name))
                    self.db.execute("UPDATE refs SET name = ? WHERE name = ?", (moved_to, name))
                    known[moved_to] = known.pop(name)
            for name in set(known) - set(files):
                self._forget(name)
            for name, path in files.items():
                st = path.stat()
                inode, offset = known.get(name, (st.st_ino, 0))
                if inode != st.st_ino or offset > st.st_size:
                    self._forget(name)
                    inode, offset = st.st_ino, 0
                end = _complete_end(path, offset)  # first: lines appended while we read wait for the next refresh
                rows = [(key, name, pos) for pos, entry in read_entries(path, offset, offsets=True, stop=end)
                        for key in entry_keys(entry)]
                self.db.executemany("INSERT INTO refs VALUES (?, ?, ?)", rows)
                self.db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?)", (name, st.st_ino, end))

    def _forget(self, name: str) -> None:
        self.db.execute("DELETE FROM refs WHERE name = ?", (name,))
        self.db.execute("DELETE FROM files WHERE name = ?", (name,))

    def lookup(self, key: str) -> list[dict]:
        """Every entry with ``key`` (see :func:`~.journal.entry_keys`), oldest first."""
        self.refresh()
        order = {p.name: i for i, p in enumerate(self.journal.files())}
        hits: dict[str, list[int]] = {}
        for name, offset in self.db.execute("SELECT name, offset FROM refs WHERE key = ? ORDER BY offset", (key,)):
            hits.setdefault(name, []).append(offset)
        out = []
        for name in sorted(hits, key=lambda n: order.get(n, -1)):
            out += entries_at(self.journal.path.with_name(name), hits[name])
        return out


def _complete_end(path: Path, start: int) -> int:
    """The offset just past the last complete line of ``path`` at or after ``start``."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        pos = size
        while pos > start:
            step = min(65536, pos - start)
            fh.seek(pos - step)
            chunk = fh.read(step)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                return pos - step + nl + 1
            pos -= step
    return start
