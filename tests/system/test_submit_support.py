"""Shared by the test_submit_* system tests: one local cluster with the shim, and control of its daemon.

The cluster (``start_cluster("submit", Needs(job_submit=True))``) is started once per test process and stopped
at exit; the daemon is a real ``hetsched daemon run`` subprocess (:class:`DaemonProcess`) on
``<root>/run/hetsched.sock``, stopped, killed, hung (SIGSTOP) or resumed by its own pid only. :class:`GarbageDaemon` stands in for a daemon that
answers nonsense.
"""

from __future__ import annotations

import atexit
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.system.conftest import Needs, start_cluster

from slurm_plugin.cluster.local import LocalCluster
from slurm_plugin.daemon.bench import FixedReplyServer
from slurm_plugin.daemon.process import DaemonProcess
from slurm_plugin.slurm import SlurmClient


@dataclass
class Submitted:
    """One sbatch run: exit code, job id (None if refused), what it printed, wall time in seconds."""

    code: int
    job_id: int | None
    stdout: str
    stderr: str
    seconds: float


class GarbageDaemon(FixedReplyServer):
    """Listens on the daemon's socket and answers every line with ``reply`` (default: not JSON)."""

    def __init__(self, path: Path, reply: bytes = b"}{ this is not JSON\n"):
        super().__init__(path, reply)


class SubmitEnv:
    """The cluster, its client and its daemon (one per test process)."""

    _shared: SubmitEnv | None = None

    def __init__(self):
        self.cluster: LocalCluster = start_cluster("submit", Needs(job_submit=True))
        self.root = Path(self.cluster.root)
        self.slurm: SlurmClient = self.cluster.client()
        self.daemon = DaemonProcess(self.root)
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


def submit_env(start_daemon: bool = True):
    """A module-scoped ``env`` fixture: the shared :class:`SubmitEnv`, its daemon started unless
    ``start_daemon`` is False (fail-open tests start and kill it themselves); after the module, its jobs are
    cancelled and the daemon stopped."""

    @pytest.fixture(scope="module")
    def env() -> Iterator[SubmitEnv]:
        shared = SubmitEnv.get()
        if start_daemon:
            shared.daemon.start()
        try:
            yield shared
        finally:
            shared.cancel_all()
            shared.daemon.stop()

    return env
