"""One log line per power call (node, backend, duration, result), to syslog/journald and to a log file.

slurmctld discards what Resume/SuspendProgram print, so every call is recorded here instead:

* syslog: a datagram to ``/dev/log`` (journald listens there; ``HETSCHED_SYSLOG_SOCKET`` overrides the path),
  ident ``hetsched-power``, facility daemon, ``info`` for ok and ``warning`` for failed calls;
* a file: ``--log-file``, ``HETSCHED_POWER_LOG`` or ``/var/log/hetsched/power.log`` (its directory must be
  writable by SlurmUser).

Logging never fails a power call: an unwritable file or a missing syslog socket costs one warning on stderr.
"""

from __future__ import annotations

import os
import socket
import sys
import time

DEFAULT_LOG = "/var/log/hetsched/power.log"
SYSLOG_SOCKET = "/dev/log"
IDENT = "hetsched-power"
_FACILITY_DAEMON, _INFO, _WARNING = 3, 6, 4


def _quote(text: str) -> str:
    return '"' + " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_call(action: str, node: str, backend: str, seconds: float, ok: bool, detail: str) -> str:
    """``resume node=armn1 backend=ipmi duration=0.412s result=ok detail="already on"`` (one line, always)."""
    return (f"{action} node={node} backend={backend} duration={seconds:.3f}s result={'ok' if ok else 'failed'} "
            f"detail={_quote(detail)}")


class CallLog:
    """Where this run's lines go; :meth:`record` writes one call to both sinks."""

    def __init__(self, log_file: str | None = None, syslog_socket: str | None = None):
        self.path = log_file or os.environ.get("HETSCHED_POWER_LOG") or DEFAULT_LOG
        self.syslog_socket = syslog_socket or os.environ.get("HETSCHED_SYSLOG_SOCKET") or SYSLOG_SOCKET
        self._warned: set[str] = set()

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            print(f"hetsched: warning: {message}", file=sys.stderr)

    def _syslog(self, line: str, ok: bool) -> None:
        pri = _FACILITY_DAEMON * 8 + (_INFO if ok else _WARNING)
        msg = f"<{pri}>{time.strftime('%b %d %H:%M:%S')} {IDENT}[{os.getpid()}]: {line}".encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                s.sendto(msg, self.syslog_socket)
        except OSError as err:
            self._warn("syslog", f"cannot log to syslog at {self.syslog_socket}: {err.strerror or err}")

    def _file(self, line: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            with open(self.path, "a") as fh:
                fh.write(f"{stamp} {IDENT}[{os.getpid()}]: {line}\n")
        except OSError as err:
            self._warn("file", f"cannot write power log {self.path}: {err.strerror or err}")

    def record(self, action: str, node: str, backend: str, seconds: float, ok: bool, detail: str) -> str:
        line = format_call(action, node, backend, seconds, ok, detail)
        self._syslog(line, ok)
        self._file(line)
        return line
