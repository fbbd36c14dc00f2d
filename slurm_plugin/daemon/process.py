"""Run the admission daemon as a child process and control it by its pid (tests, benchmarks, local clusters)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def ask(socket_path: str | Path, job: dict | None = None, raw: bytes | None = None, timeout: float = 3.0) -> dict:
    """Send one request (``job`` fields, or ``raw`` bytes) and return the decoded reply; {} if unreachable."""
    line = raw if raw is not None else json.dumps({"v": 1, "op": "submit", "job": job or {}}).encode() + b"\n"
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        try:
            s.connect(str(socket_path))
            s.sendall(line)
            return json.loads(s.makefile("rb").readline() or b"{}")
        except (OSError, ValueError):
            return {}


class DaemonProcess:
    """``hetsched daemon run`` for the local cluster under ``root`` (socket ``<root>/run/hetsched.sock``).

    Only the process this object started is ever signalled. ``start`` waits until the daemon answers and,
    with ``wait_for_snapshot``, until its first snapshot is in (an untyped GPU request is routed to a
    partition). ``hang``/``resume`` send SIGSTOP/SIGCONT; ``kill`` sends SIGKILL and removes the socket file.
    ``metrics_listen``: the daemon's ``--metrics-listen`` (None: its default, 127.0.0.1:9817); ``extra``: more
    options of ``daemon run``; ``niceness``: run it under ``nice -n`` (negative: ahead of other processes).
    """

    def __init__(self, root: str | Path, refresh_s: float = 1.0, allow_user: str = "root",
                 metrics_listen: str | None = None, extra: tuple[str, ...] = (), niceness: int = 0):
        self.root = Path(root)
        self.socket = self.root / "run" / "hetsched.sock"
        self.pid_file = self.root / "run" / "hetsched-daemon.pid"
        self.log = self.root / "log" / "hetsched-daemon.log"
        self.refresh_s, self.allow_user, self.metrics_listen = refresh_s, allow_user, metrics_listen
        self.extra, self.niceness = tuple(extra), niceness
        self.proc: subprocess.Popen | None = None

    def argv(self) -> list[str]:
        return [*(("nice", "-n", str(self.niceness)) if self.niceness else ()),
                sys.executable, "-m", "slurm_plugin", "daemon", "run", "--socket", str(self.socket),
                "--site", str(self.root / "site.yaml"), "--slurm-conf", str(self.root / "etc" / "slurm.conf"),
                "--allow-user", self.allow_user, "--pid-file", str(self.pid_file), "--refresh", str(self.refresh_s),
                *(("--metrics-listen", self.metrics_listen) if self.metrics_listen else ()), *self.extra]

    def start(self, wait_for_snapshot: bool = True, timeout: float = 30.0) -> None:
        """(Re)start the daemon; raises RuntimeError naming the log if it does not answer in time."""
        self.stop()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.socket.exists():
                reply = ask(self.socket, {"gres": "gres:gpu:1"})
                if reply.get("ok") and (not wait_for_snapshot or reply.get("set", {}).get("partition")):
                    return
            time.sleep(0.1)
        raise RuntimeError(f"the daemon did not answer within {timeout:.0f} s; see {self.log}")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.running:
            os.kill(self.proc.pid, sig)

    def hang(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (after SIGCONT, in case it is hung) and wait; SIGKILL if it does not exit in time."""
        if self.running:
            self.resume()
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None

    def kill(self) -> None:
        if self.running:
            self.signal(signal.SIGKILL)
            self.proc.wait(5)
        self.proc = None
        self.socket.unlink(missing_ok=True)
