"""Carries slurmctld's power requests out of the ctl container to the host, where the containers are.

slurmctld runs its Resume/Suspend/ResumeFailProgram inside the ctl container, which cannot start containers:
those programs (``etc/hetsched-resume`` etc.) only drop ``<action> <hostlist>`` into files under
slurmctld's state directory (the host's ``<root>/data/<release>/ctld/power``). This relay, started by ``up`` as a detached host
process (its pid recorded, stopped by ``down``), takes them in order and runs ``hetsched power <action>
--backend container`` for each, so every call is logged (``log/power.log``) and a node that does not come up is
set DOWN, as with the other backends.

    python -m slurm_plugin.cluster.power_relay ROOT SITE_FILE INBOX
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from ..data import child_pythonpath

log = logging.getLogger(__name__)
ACTIONS = ("resume", "suspend", "resume-fail")
# what slurmctld runs in the ctl container: one request file per call, written whole (rename)
PROGRAM = """#!/bin/sh
# slurmctld's {action} program in the ctl container: hand '{action} HOSTLIST' to the host's power relay
d=/var/spool/slurmctld/power
mkdir -p "$d" && printf '%s %s\\n' {action} "$1" > "$d/.$$.tmp" && mv "$d/.$$.tmp" "$d/$(date +%s%N).$$"
"""


def handle(root: Path, request: Path, site_path: str) -> int:
    """Run one request through ``hetsched power``; returns its exit code. The request file is removed."""
    try:
        action, hosts = request.read_text().split()
    except ValueError:
        log.warning("ignoring malformed power request %s", request)
        request.unlink(missing_ok=True)
        return 2
    if action not in ACTIONS:
        request.unlink(missing_ok=True)
        return 2
    argv = [sys.executable, "-m", "slurm_plugin", "power", action, "--backend", "container", "--cluster", str(root),
            "--site", site_path, "--log-file", str(root / "log" / "power.log"),
            "--slurm-conf", str(root / "etc" / "slurm.conf"), hosts]
    env = {"PYTHONPATH": child_pythonpath(), "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "CONTAINERS_CONF": str(root / "containers.conf"),
           # the Podman storage `up` ran with (the relay inherits it): the cluster's containers are only found there
           **{k: os.environ[k] for k in ("CONTAINERS_STORAGE_CONF",) if k in os.environ}}
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    request.unlink(missing_ok=True)
    print(f"{time.strftime('%H:%M:%S')} {action} {hosts}: exit {proc.returncode} {proc.stdout.strip()} "
          f"{proc.stderr.strip()}", flush=True)
    return proc.returncode


def relay(root: Path, site_path: str, inbox: Path, poll: float = 0.5) -> None:
    inbox.mkdir(parents=True, exist_ok=True)
    while True:
        for request in sorted(inbox.glob("[0-9]*")):
            handle(root, request, site_path)
        time.sleep(poll)


if __name__ == "__main__":
    relay(Path(sys.argv[1]).resolve(), sys.argv[2], Path(sys.argv[3]))
