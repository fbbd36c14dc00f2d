"""The local cluster's RebootProgram: "reboots" the node whose slurmd ran it by restarting that slurmd with a
fresh boot time (a new time namespace, as a powered-up node gets), the way a real node's RebootProgram
(``/sbin/reboot``) returns at once and the node comes back later.

slurmd runs RebootProgram with ``system()`` and no arguments while its RPC waits, so this finds its node from
the slurmd above it in the process tree (``slurmd ... -N NODE``), hands the restart to a detached process and
returns; the detached process waits until slurmd is done with the call, stops that slurmd by its recorded pid
and starts it again. slurmctld then sees the node register with a boot time later than the reboot request and,
with ``nextstate=RESUME``, returns it to service.

    python -m slurm_plugin.cluster.reboot ROOT              # what the rendered bin/reboot runs
    python -m slurm_plugin.cluster.reboot ROOT --restart NODE [--delay S]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from .procs import cmdline, spawn_detached


def node_of_caller(pid: int | None = None, hops: int = 8) -> str | None:
    """The ``-N NODE`` of the nearest slurmd among ``pid``'s ancestors (default: this process's parent)."""
    pid = os.getppid() if pid is None else pid
    for _ in range(hops):
        if pid <= 1:
            return None
        argv = cmdline(pid).split()
        if any(Path(a).name == "slurmd" for a in argv) and "-N" in argv[:-1]:
            return argv[argv.index("-N") + 1]
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return None
    return None


def restart(root: Path, node: str, delay: float) -> None:
    """Stop ``node``'s slurmd (by its pid file) and start it again as a freshly booted node."""
    from .local import LocalCluster

    time.sleep(delay)  # let slurmd finish the reboot RPC that ran us
    cluster = LocalCluster(root)
    if not cluster.stop_slurmd(node):
        print(f"{node}: slurmd did not stop", flush=True)
        sys.exit(1)
    pid = cluster.start_slurmd(node, boot_delay=1.0)
    print(f"{time.strftime('%H:%M:%S')} {node}: rebooted (slurmd pid {pid})", flush=True)


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[1] == "--restart":
        delay = float(argv[argv.index("--delay") + 1]) if "--delay" in argv else 2.0
        restart(Path(argv[0]), argv[2], delay)
        return 0
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[0])
    node = node_of_caller() or os.environ.get("SLURMD_NODENAME")
    if not node:
        print("reboot: no slurmd -N NODE above this process and no SLURMD_NODENAME", file=sys.stderr)
        return 1
    spawn_detached([sys.executable, "-m", "slurm_plugin.cluster.reboot", str(root), "--restart", node],
                   root / "log" / "reboot.log", env=dict(os.environ))
    print(f"{time.strftime('%H:%M:%S')} {node}: reboot requested", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
