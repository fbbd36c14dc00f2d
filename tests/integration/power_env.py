"""Where ``hetsched power`` logs during tests: a log file and a syslog socket under the test's tmp dir.

:func:`power_logs` points ``HETSCHED_POWER_LOG`` and ``HETSCHED_SYSLOG_SOCKET`` there (a real Unix datagram
socket that collects what would reach journald), so tests read both sinks and never touch /var/log.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class PowerLogs:
    file: Path
    syslog: socket.socket

    def syslog_lines(self) -> list[str]:
        out = []
        self.syslog.setblocking(False)
        while True:
            try:
                out.append(self.syslog.recv(65536).decode())
            except BlockingIOError:
                return out

    def file_lines(self) -> list[str]:
        return self.file.read_text().splitlines() if self.file.exists() else []


@pytest.fixture
def power_logs(tmp_path, monkeypatch) -> PowerLogs:
    sock_path = tmp_path / "syslog.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(sock_path))
    monkeypatch.setenv("HETSCHED_SYSLOG_SOCKET", str(sock_path))
    monkeypatch.setenv("HETSCHED_POWER_LOG", str(tmp_path / "power.log"))
    yield PowerLogs(tmp_path / "power.log", sock)
    sock.close()
