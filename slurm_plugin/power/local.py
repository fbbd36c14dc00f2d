"""Power backend of the local one-host cluster: a node is "on" while its slurmd process runs."""

from __future__ import annotations

from pathlib import Path

from ..cluster.local import LocalCluster
from .base import PowerResult


class LocalPower:
    """``boot_delay``: seconds a resumed node takes to "boot" (slurmctld needs its boot time to be after
    the resume request, which it keeps in whole seconds)."""

    name = "local"

    def __init__(self, cluster: str | Path, boot_delay: float = 2.0):
        self.boot_delay = boot_delay
        self.cluster = LocalCluster(cluster)
        self.known = set(self.cluster.state().get("slurmd_ports", {}))

    def _unknown(self, host: str) -> str | None:
        return None if host in self.known else f"{host} is not a node of the cluster at {self.cluster.root}"

    def resume(self, hosts: list[str]) -> PowerResult:
        res = PowerResult()
        for host in hosts:
            if err := self._unknown(host):
                res.failed[host] = err
                continue
            self.cluster.start_slurmd(host, boot_delay=self.boot_delay)
            res.done.append(host)
        return res

    def suspend(self, hosts: list[str]) -> PowerResult:
        res = PowerResult()
        for host in hosts:
            if err := self._unknown(host):
                res.failed[host] = err
            elif self.cluster.stop_slurmd(host):
                res.done.append(host)
            else:
                res.failed[host] = "slurmd did not stop"
        return res
