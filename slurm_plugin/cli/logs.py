"""Log output for operators: plain text on a terminal, journald's form under systemd, or JSON lines.

``journal`` (chosen automatically when stderr is journald's stream, ``$JOURNAL_STREAM``): no timestamp of our
own (journald keeps one) and a ``<N>`` syslog priority prefix on every line, so ``journalctl -p warning`` works;
``json``: one object per record (``ts``, ``level``, ``logger``, ``message``, ``exc`` for a traceback). In both,
the structured fields a record carries (``extra={"node": ..., "job": ..., "action": ..., "reason": ...}``,
see :data:`FIELDS`) are kept: as JSON keys, or as ``key=value`` after the message.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys

FORMATS = ("auto", "text", "journal", "json")
FIELDS = ("node", "job", "action", "cause", "status", "reason")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# syslog priorities (sd-daemon(3)): journald reads them from a "<N>" line prefix
_PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3, logging.CRITICAL: 2}


def priority(levelno: int) -> int:
    """The syslog priority of a logging level (levels between the named ones round to the more severe)."""
    return next((p for lvl, p in sorted(_PRIORITY.items(), reverse=True) if levelno >= lvl), 7)


def fields_of(record: logging.LogRecord) -> dict:
    return {k: getattr(record, k) for k in FIELDS if getattr(record, k, None) not in (None, "", (), [])}


class JournalFormatter(logging.Formatter):
    """``<N>logger: message key=value ...``; every line of a traceback gets the prefix too (journald stores
    each line as its own entry)."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"{record.name}: {record.getMessage()}"
        extra = fields_of(record)
        if extra:
            text += " " + " ".join(f"{k}={json.dumps(v) if isinstance(v, str) and ' ' in v else v}"
                                   for k, v in extra.items())
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        prefix = f"<{priority(record.levelno)}>"
        return "\n".join(prefix + line for line in text.splitlines())


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {"ts": dt.datetime.fromtimestamp(record.created, dt.timezone.utc).isoformat(timespec="milliseconds"),
               "level": record.levelname, "logger": record.name, "message": record.getMessage(),
               **fields_of(record)}
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, ensure_ascii=False)


def under_journald(stream=None) -> bool:
    """Whether ``stream`` (stderr) is the journal stream systemd connected ($JOURNAL_STREAM is its dev:inode)."""
    want = os.environ.get("JOURNAL_STREAM", "")
    try:
        st = os.fstat((stream or sys.stderr).fileno())
    except (OSError, ValueError, AttributeError):  # no real file behind it (tests capture it)
        return False
    return want == f"{st.st_dev}:{st.st_ino}"


def configure(level: int, fmt: str = "auto") -> str | None:
    """Send the root logger's records to stderr at ``level`` in ``fmt`` (see :data:`FORMATS`); returns the
    format used. Like ``logging.basicConfig``, it leaves a root logger that has handlers of others alone
    (None: e.g. pytest's), and replaces its own from an earlier call."""
    root = logging.getLogger()
    if any(not getattr(h, "hetsched", False) for h in root.handlers):
        return None
    if fmt == "auto":
        fmt = "journal" if under_journald() else "text"
    handler = logging.StreamHandler(sys.stderr)
    handler.hetsched = True  # type: ignore[attr-defined]
    handler.setFormatter(JournalFormatter() if fmt == "journal" else JsonFormatter() if fmt == "json"
                         else logging.Formatter(TEXT_FORMAT))
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return fmt
