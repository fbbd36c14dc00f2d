"""Power backend of the container cluster: a node is "on" while its container runs.

Starting a node's container is its boot: slurmd starts in a fresh Linux time namespace (containers/entry.sh),
so slurmctld sees a boot time after its resume request. Containers are started and stopped by the ids the
cluster recorded at ``up``.
"""

from __future__ import annotations

from pathlib import Path

from .base import PerNodeBackend, PowerError


class ContainerPower(PerNodeBackend):
    name = "container"
    workers = 4
    call_timeout = 60.0

    def __init__(self, cluster: str | Path):
        from ..cluster.containers import ContainerCluster

        self.cluster = ContainerCluster(cluster)
        self.known = set(self.cluster.state().get("containers", {})) - {"db", "dbd", "ctl"}

    def power(self, host: str, on: bool) -> str:
        if host not in self.known:
            raise PowerError(f"{host} is not a node container of the cluster at {self.cluster.root}")
        return self.cluster.power_node(host, on)
