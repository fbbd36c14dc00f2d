"""Power backend of the container cluster: a node is "on" while its container runs.

Starting a node's container is its boot: slurmd starts with ``-b`` (containers/entry.sh), so slurmctld sees a
boot time after its resume request; a node Slurm boots whose container already runs is restarted (see
:meth:`~slurm_plugin.cluster.containers.ContainerCluster.power_node`). Containers are started and stopped by the
ids the cluster recorded at ``up``. ``hetsched power`` sets a node that failed to boot DOWN through the
cluster's ctl container: the host may run no munged, or one with another key.
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
