"""The real daemon with ``--cpu-latency-us`` on the local cluster: while it serves, the kernel's PM QoS limit
(``/dev/cpu_dma_latency``, which reads back the limit in force) is the one it asked for, through a file only
the daemon's process holds; once it is stopped the limit is what it was before (daemon/cpu_latency.py)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from slurm_plugin.daemon.cpu_latency import DEVICE
from slurm_plugin.daemon.process import DaemonProcess, ask
from tests.system.conftest import allocate_ports

pytestmark = pytest.mark.system


def limit_in_force() -> int:
    return struct.unpack("=i", DEVICE.read_bytes()[:4])[0]


def holders(pid: int) -> list[str]:
    fds = Path(f"/proc/{pid}/fd")
    return [str(p) for p in fds.iterdir() if os.path.realpath(p) == str(DEVICE)]


@pytest.mark.skipif(os.geteuid() != 0 or not DEVICE.exists(), reason="needs root and /dev/cpu_dma_latency")
def test_the_daemon_holds_the_limit_while_it_serves_and_lets_go(cluster):
    before = limit_in_force()
    asked = 17 if before != 17 else 18  # a value nothing else on the machine is likely to hold
    proc = DaemonProcess(cluster.root, metrics_listen=f"127.0.0.1:{allocate_ports(1)}",
                         extra=("--cpu-latency-us", str(asked)))
    proc.start(wait_for_snapshot=False)
    try:
        assert ask(proc.socket, {"min_cpus": 1}).get("ok")
        assert len(holders(proc.proc.pid)) == 1
        assert limit_in_force() == min(asked, before)
    finally:
        proc.stop()
    assert limit_in_force() == before
