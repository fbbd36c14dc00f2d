"""The append-only audit record of sensitive jobs: one JSON line per event (``start`` by the Prolog, ``end``
by the Epilog) with who (user, uid), what (job id, name, partition), where (node) and when (UTC time).

Append-only by construction: the file is only ever opened with ``O_APPEND`` (each line one ``write``, under an
``flock`` so lines of concurrent nodes never interleave), and every line carries ``prev``, the SHA-256 of the
line before it, so an edited or removed line breaks the chain :func:`verify` walks (tamper-evident; a site
that wants tamper-proof adds ``chattr +a`` or ships the lines to its log server).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from pathlib import Path

GENESIS = "0" * 64


def _last_line(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    if size == 0:
        return b""
    chunk = os.pread(fd, min(size, 65536), max(0, size - 65536))
    lines = chunk.rstrip(b"\n").split(b"\n")
    return lines[-1] if lines else b""


def append(path: str | Path, event: str, **fields: object) -> dict:
    """Append one record (``event`` plus ``fields``, ``time`` and ``prev`` added); returns it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    rfd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        last = _last_line(rfd)
        record = {"event": event, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields,
                  "prev": hashlib.sha256(last).hexdigest() if last else GENESIS}
        os.write(fd, (json.dumps(record, sort_keys=True) + "\n").encode())
        os.fsync(fd)
        return record
    finally:
        os.close(rfd)
        os.close(fd)


def records(path: str | Path) -> list[dict]:
    p = Path(path)
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()] if p.exists() else []


def verify(path: str | Path) -> list[str]:
    """Problems with the chain (empty: intact): ``line N: prev does not match line N-1``."""
    problems, prev = [], GENESIS
    for n, line in enumerate(Path(path).read_bytes().splitlines(), 1) if Path(path).exists() else []:
        try:
            rec = json.loads(line)
        except ValueError:
            problems.append(f"{path}:{n}: not JSON")
            prev = hashlib.sha256(line).hexdigest()
            continue
        if rec.get("prev") != prev:
            problems.append(f"{path}:{n}: prev does not match line {n - 1} (edited or removed)")
        prev = hashlib.sha256(line).hexdigest()
    return problems
