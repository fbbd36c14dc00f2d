"""Shared by the test_submit_* system tests: one local cluster with the shim, and control of its daemon.

The cluster (``start_cluster("submit", 100, job_submit=True)``) is started once per test process and stopped
at exit; the daemon is a real ``hetsched daemon run`` subprocess on ``<root>/run/hetsched.sock``, stopped,
killed, hung (SIGSTOP) or resumed by its own pid only. :class:`GarbageDaemon` stands in for a daemon that
answers nonsense.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.system.conftest import start_cluster

from slurm_plugin.cluster.local import LocalCluster
from slurm_plugin.slurm import SlurmClient


@dataclass
class Submitted:
    """One sbatch run: exit code, job id (None if refused), what it printed, wall time in seconds."""

    code: int
    job_id: int | None
    stdout: str
    stderr: str
    seconds: float


class Daemon:
    """The admission daemon of the test cluster, as a subprocess controlled by its pid."""

    def __init__(self, root: Path):
        self.root = root
        self.socket = root / "run" / "hetsched.sock"
        self.pid_file = root / "run" / "hetsched-daemon.pid"
        self.log = root / "log" / "hetsched-daemon.log"
        self.proc: subprocess.Popen | None = None

    def start(self, wait_for_snapshot: bool = True) -> None:
        self.stop()
        argv = [sys.executable, "-m", "slurm_plugin", "daemon", "run", "--socket", str(self.socket),
                "--site", str(self.root / "site.yaml"), "--slurm-conf", str(self.root / "etc" / "slurm.conf"),
                "--allow-user", "root", "--pid-file", str(self.pid_file), "--refresh", "1"]
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.socket.exists():
                reply = self.ask({"gres": "gres:gpu:1"})
                if reply.get("ok") and (not wait_for_snapshot or reply.get("set", {}).get("partition") == "gpu"):
                    return
            time.sleep(0.1)
        raise RuntimeError(f"daemon did not come up; see {self.log}")

    def ask(self, job: dict, raw: bytes | None = None) -> dict:
        line = raw if raw is not None else json.dumps({"v": 1, "op": "submit", "job": job}).encode() + b"\n"
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(3)
            try:
                s.connect(str(self.socket))
                s.sendall(line)
                return json.loads(s.makefile("rb").readline() or b"{}")
            except OSError:
                return {}

    def signal(self, sig: int) -> None:
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.wait(5)
        self.proc = None

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        if self.proc:
            self.proc.wait(5)
        self.proc = None
        self.socket.unlink(missing_ok=True)


class GarbageDaemon:
    """Listens on the daemon's socket and answers every line with ``reply`` (default: not JSON)."""

    def __init__(self, path: Path, reply: bytes = b"}{ this is not JSON\n"):
        path.unlink(missing_ok=True)
        self.path, self.reply = path, reply
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen(16)
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.settimeout(2)
                    reader = conn.makefile("rb")
                    while reader.readline():
                        conn.sendall(self.reply)
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()
        self.path.unlink(missing_ok=True)


class SubmitEnv:
    """The cluster, its client and its daemon (one per test process)."""

    _shared: SubmitEnv | None = None

    def __init__(self):
        self.cluster: LocalCluster = start_cluster("submit", 100, job_submit=True)
        self.root = Path(self.cluster.root)
        self.slurm: SlurmClient = self.cluster.client()
        self.daemon = Daemon(self.root)
        self.ctld_log = self.root / "log" / "slurmctld.log"

    @classmethod
    def get(cls) -> SubmitEnv:
        if cls._shared is None:
            cls._shared = cls()
            atexit.register(cls._shared.close)
        return cls._shared

    def close(self) -> None:
        self.daemon.stop()
        self.cluster.down()

    def sbatch(self, *args: str) -> Submitted:
        argv = ["sbatch", "--parsable", "--hold", "-o", "/dev/null", *args, "--wrap", "true"]
        started = time.monotonic()
        proc = self.slurm.run(*argv, check=False)
        seconds = time.monotonic() - started
        job_id = int(proc.stdout.strip().split(";")[0]) if proc.returncode == 0 else None
        return Submitted(proc.returncode, job_id, proc.stdout, proc.stderr, seconds)

    def job(self, job_id: int) -> dict[str, str]:
        return self.slurm.show_job(job_id)

    def cancel_all(self) -> None:
        self.slurm.run("scancel", "--user", "root", check=False)

    def ctld_log_since(self, offset: int) -> str:
        with open(self.ctld_log, errors="replace") as f:
            f.seek(offset)
            return f.read()

    def ctld_log_size(self) -> int:
        return self.ctld_log.stat().st_size
