"""Start a real Redfish service for benchmarks and tests: sushy-tools' emulator with its fake driver.

``sushy-emulator --fake`` serves one ComputerSystem per entry of ``SUSHY_EMULATOR_FAKE_SYSTEMS`` (named after
the node) and applies a power change 1-11 s after the request, as a slow BMC would. It is a test dependency
(``pip install '.[test]'``), not needed in production.
"""

from __future__ import annotations

import os
import shutil
import socket
import sysconfig
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sushy(work: Path, nodes: list[str], power_state: str = "Off", wait: float = 60.0,
                command: list[str] | None = None) -> tuple[int, str]:
    """Start one emulator serving a system per node (files under ``work``); returns (pid, base URL).
    ``command``: what to run instead of ``sushy-emulator`` (same arguments), e.g. a launcher whose fake driver
    keeps BIOS attributes.

    Stop it with ``stop_pid(pid, "sushy-emulator")``. Raises RuntimeError (with its log) if it does not answer.
    """
    from ..cluster.procs import is_running, spawn_detached, stop_pid

    # beside this interpreter first: a venv's scripts are not on PATH when it runs as .venv/bin/python
    scripts = sysconfig.get_path("scripts")
    exe = shutil.which("sushy-emulator", path=os.pathsep.join([scripts, os.environ.get("PATH", os.defpath)]))
    name = "sushy-emulator" if command is None else command[-1]  # what its command line shows (stop_pid checks it)
    if command is not None:
        exe = command
    elif exe is None:
        raise RuntimeError("sushy-emulator missing: pip install '.[test]' (sushy-tools)")
    work.mkdir(parents=True, exist_ok=True)
    systems = [{"uuid": f"00000000-0000-0000-0000-{i:012d}", "name": n, "power_state": power_state,
                "external_notifier": False, "nics": []} for i, n in enumerate(nodes, 1)]
    (work / "emulator.conf").write_text(f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}\n"
                                        f"SUSHY_EMULATOR_STATE_DIR = {str(work / 'state')!r}\n")
    port = free_port()
    log = work / "emulator.log"
    pid = spawn_detached([*([exe] if isinstance(exe, str) else exe), "--fake", "--config", str(work / "emulator.conf"), "-i", "127.0.0.1", "-p", str(port)],
                         log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + wait
    while True:
        try:
            urllib.request.urlopen(url + "/redfish/v1/Systems", timeout=2).read()
            return pid, url
        except OSError:
            if time.monotonic() > deadline or not is_running(pid):  # (pyenv shims exec through bash)
                stop_pid(pid, name)
                raise RuntimeError(f"sushy-emulator did not answer within {wait:.0f} s: {log.read_text()[-2000:]}")
            time.sleep(0.2)
