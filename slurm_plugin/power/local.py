"""Power backend of the local one-host cluster: a node is "on" while its slurmd process runs."""

from __future__ import annotations

from pathlib import Path

from .base import PerNodeBackend, PowerError


class LocalPower(PerNodeBackend):
    """``boot_delay``: seconds a resumed node takes to "boot" (slurmctld needs its boot time to be after
    the resume request, which it keeps in whole seconds)."""

    name = "local"
    workers = 4
    call_timeout = 30.0

    def __init__(self, cluster: str | Path, boot_delay: float = 2.0):
        from ..cluster.local import LocalCluster

        self.boot_delay = boot_delay
        self.cluster = LocalCluster(cluster)
        self.known = set(self.cluster.state().get("slurmd_ports", {}))

    def power(self, host: str, on: bool) -> str:
        if host not in self.known:
            raise PowerError(f"{host} is not a node of the cluster at {self.cluster.root}")
        if on:
            pid = self.cluster.start_slurmd(host, boot_delay=self.boot_delay)
            return f"slurmd pid {pid}"
        if not self.cluster.stop_slurmd(host):
            raise PowerError("slurmd did not stop")
        return "slurmd stopped"
