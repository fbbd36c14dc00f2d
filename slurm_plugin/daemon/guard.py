"""The daemon's defences that are not the protocol: its socket directory, log lines, and refusal logging.

- :func:`secure_socket_dir`: the directory the socket lives in is created 0755 owned by the daemon's user,
  and an existing one (or any directory above it) that another user could write is refused, so no one else
  can replace the socket: the shim trusts the socket because of exactly this (docs/trust.md).
- :class:`EscapeControl`: a logging filter that escapes control characters in a record's final message, so
  user-controlled strings (job names, comments, reasons quoting them) cannot forge log lines.
- :class:`RateLimited`: at most one line per key per ``period_s``, with how many were suppressed.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import time
from pathlib import Path

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _unsafe(st: os.stat_result, me: int, strict: bool) -> str:
    """Why a directory with ``st`` is not safe for the socket ('' if it is). ``strict``: no sticky exception."""
    if st.st_uid not in (0, me):
        return f"is owned by uid {st.st_uid}"
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and (strict or not st.st_mode & stat.S_ISVTX):
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return ""


def secure_socket_dir(socket_path: Path) -> None:
    """Create the socket's directory (0755, owner: this process's user) or check it; raise RuntimeError naming
    the directory when it, or a directory above it, could be written by another user."""
    me = os.geteuid()
    parent = socket_path.parent
    if not parent.exists():
        parent.mkdir(parents=True, mode=0o755)
        os.chmod(parent, 0o755)  # mkdir's mode is filtered by the umask
    for i, d in enumerate([parent, *parent.parents]):
        why = _unsafe(d.stat(), me, strict=i == 0)
        if why:
            raise RuntimeError(f"socket directory {d} {why}: another user could replace the daemon's socket; "
                               f"make it owned by root (or uid {me}) and mode 0755")


def escape(text: str) -> str:
    r"""``text`` with control characters written as ``\n``, ``\r``, ``\t`` or ``\xNN``."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: repr(m[0])[1:-1] if m[0] in "\n\r\t" else f"\\x{ord(m[0]):02x}", text)


class EscapeControl(logging.Filter):
    """Escapes control characters in every record's message (one record = one line in the log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        safe = escape(message)
        if safe is not message:
            record.msg, record.args = safe, None
        return True


class RateLimited:
    """``allow(key)`` is True at most once per ``period_s`` per key; ``suppressed(key)`` counts the rest since."""

    def __init__(self, period_s: float = 60.0, max_keys: int = 1024):
        self.period_s, self.max_keys = period_s, max_keys
        self._last: dict = {}
        self._dropped: dict = {}

    def allow(self, key) -> bool:
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < self.period_s:
            self._dropped[key] = self._dropped.get(key, 0) + 1
            return False
        if len(self._last) >= self.max_keys:
            self._last.clear()
        self._last[key] = now
        return True

    def suppressed(self, key) -> int:
        """How many were refused since the last allowed one (and reset the count)."""
        return self._dropped.pop(key, 0)
