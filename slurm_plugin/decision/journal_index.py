"""A SQLite index beside the journal (``journal.jsonl.index.sqlite``): job id / node -> (file, byte offset), and
every entry's time, kind, cause and outcome (``hetsched decisions --since 1h --kind power``).

A cache, never the truth: it can be deleted at any time and is rebuilt from the journal files (a corrupt one
is deleted and rebuilt). Each lookup first indexes what was appended since the last one (per file: inode and
offset reached), follows a rotated file by its inode (a rename keeps it), and forgets files that were removed;
a file that shrank or was replaced is indexed again from its start. ``why`` on a long journal then reads only
the lines it prints.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .journal import DecisionFilter, Journal, entries_at, entry_refs, read_entries

index_unavailable = (sqlite3.Error, OSError)  # e.g. a read-only state directory: the caller scans instead

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, inode INTEGER NOT NULL,
                                  offset INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (job INTEGER NOT NULL, file INTEGER NOT NULL, offset INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (node TEXT NOT NULL, file INTEGER NOT NULL, offset INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS entries (file INTEGER NOT NULL, offset INTEGER NOT NULL, t REAL NOT NULL, kind TEXT,
                                    cause TEXT, ok INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_job ON jobs (job);
CREATE INDEX IF NOT EXISTS nodes_node ON nodes (node);
CREATE INDEX IF NOT EXISTS entries_t ON entries (t);
"""
SCHEMA_VERSION = 2  # an index written by another version is dropped and rebuilt from the journal
_TABLES = ("files", "jobs", "nodes", "entries")


class JournalIndex:
    def __init__(self, journal: Journal, db: Path):
        self.journal, self.path = journal, db
        self.db = self._open()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=10)
        try:
            db.execute("PRAGMA synchronous = OFF")  # a cache: a crash at worst leaves it to be rebuilt
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                with db:
                    for table in _TABLES:
                        db.execute(f"DROP TABLE IF EXISTS {table}")
                    db.executescript(_SCHEMA)
                    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    @classmethod
    def beside(cls, journal: Journal) -> JournalIndex:
        path = journal.path.with_name(journal.path.name + ".index.sqlite")
        try:
            return cls(journal, path)
        except sqlite3.DatabaseError as err:
            if isinstance(err, sqlite3.OperationalError):  # cannot open/write (permissions): not ours to fix
                raise
            path.unlink(missing_ok=True)  # not a database (any more): rebuild it
            return cls(journal, path)

    def __enter__(self) -> JournalIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.db.close()

    def refresh(self) -> None:
        """Bring the index up to date with the journal files (one transaction)."""
        files = {p.name: p for p in self.journal.files()}
        with self.db:
            known = {name: (fid, inode, offset) for fid, name, inode, offset in self.db.execute("SELECT * FROM files")}
            inodes = {p.stat().st_ino: name for name, p in files.items()}
            for name, (fid, inode, _) in list(known.items()):
                moved_to = inodes.get(inode)
                if moved_to and moved_to != name and moved_to not in known:  # rotated: same inode, new name
                    self.db.execute("UPDATE files SET name = ? WHERE id = ?", (moved_to, fid))
                    known[moved_to] = known.pop(name)
            for name in set(known) - set(files):
                self._forget(known.pop(name)[0])
            for name, path in files.items():
                st = path.stat()
                fid, inode, offset = known.get(name, (None, st.st_ino, 0))
                if fid is not None and (inode != st.st_ino or offset > st.st_size):
                    self._forget(fid)
                    fid, inode, offset = None, st.st_ino, 0
                if fid is None:
                    fid = self.db.execute("INSERT INTO files (name, inode, offset) VALUES (?, ?, 0)",
                                          (name, st.st_ino)).lastrowid
                end = _complete_end(path, offset)  # first: lines appended while we read wait for the next refresh
                jobs, nodes, rows = [], [], []
                for pos, entry in read_entries(path, offset, offsets=True, stop=end):
                    ids, names = entry_refs(entry)
                    jobs += [(i, fid, pos) for i in ids]
                    nodes += [(n, fid, pos) for n in names]
                    rows.append((fid, pos, float(entry["t"]), _text(entry.get("kind")), _text(entry.get("cause")),
                                 1 if entry.get("ok") is True else 0))
                self.db.executemany("INSERT INTO jobs VALUES (?, ?, ?)", jobs)
                self.db.executemany("INSERT INTO nodes VALUES (?, ?, ?)", nodes)
                self.db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)", rows)
                self.db.execute("UPDATE files SET inode = ?, offset = ? WHERE id = ?", (st.st_ino, end, fid))

    def _forget(self, fid: int) -> None:
        for table in ("jobs", "nodes", "entries"):
            self.db.execute(f"DELETE FROM {table} WHERE file = ?", (fid,))
        self.db.execute("DELETE FROM files WHERE id = ?", (fid,))

    def lookup_job(self, job_id: int) -> list[dict]:
        return self._lookup("SELECT f.name, r.offset FROM jobs r JOIN files f ON f.id = r.file WHERE r.job = ?",
                            job_id)

    def lookup_node(self, node: str) -> list[dict]:
        return self._lookup("SELECT f.name, r.offset FROM nodes r JOIN files f ON f.id = r.file WHERE r.node = ?",
                            node)

    def select(self, where: DecisionFilter) -> list[dict]:
        """The entries ``where`` selects, oldest first (the newest ``where.limit`` if set)."""
        sql, args = ["SELECT f.name, e.offset FROM entries e JOIN files f ON f.id = e.file WHERE 1"], []
        for clause, value in (("e.t >= ?", where.since), ("e.t <= ?", where.until), ("e.kind = ?", where.kind),
                              ("e.cause = ?", where.cause)):
            if value is not None:
                sql.append(f"AND {clause}")
                args.append(value)
        if where.failed:
            sql.append("AND e.ok = 0")
        if where.job is not None:
            sql.append("AND EXISTS (SELECT 1 FROM jobs j WHERE j.file = e.file AND j.offset = e.offset AND j.job = ?)")
            args.append(where.job)
        if where.node is not None:
            sql.append("AND EXISTS (SELECT 1 FROM nodes n WHERE n.file = e.file AND n.offset = e.offset "
                       "AND n.node = ?)")
            args.append(where.node)
        sql.append("ORDER BY e.t DESC, e.file DESC, e.offset DESC")
        if where.limit is not None:
            sql.append(f"LIMIT {int(where.limit)}")
        self.refresh()
        hits = self.db.execute(" ".join(sql), args).fetchall()
        entries = self._read(hits)
        entries.sort(key=lambda e: e["t"])  # oldest first, as the journal holds them
        return entries

    def _lookup(self, query: str, key: object) -> list[dict]:
        """Every entry the query finds, oldest first (files in journal order, then by offset)."""
        self.refresh()
        return self._read(self.db.execute(query, (key,)).fetchall())

    def _read(self, rows) -> list[dict]:
        """The entries at (file name, offset) ``rows``, in journal order."""
        order = {p.name: i for i, p in enumerate(self.journal.files())}
        hits: dict[str, set[int]] = {}
        for name, offset in rows:
            hits.setdefault(name, set()).add(offset)
        out = []
        for name in sorted(hits, key=lambda n: order.get(n, -1)):
            out += entries_at(self.journal.path.with_name(name), sorted(hits[name]))
        return out


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _complete_end(path: Path, start: int) -> int:
    """The offset just past the last complete line of ``path`` at or after ``start``."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        pos = fh.tell()
        while pos > start:
            step = min(65536, pos - start)
            fh.seek(pos - step)
            chunk = fh.read(step)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                return pos - step + nl + 1
            pos -= step
    return start
