"""Power backend of the local one-host cluster: a node is "on" while its slurmd process runs."""

from __future__ import annotations

from pathlib import Path

from .base import PerNodeBackend, PowerError


class LocalPower(PerNodeBackend):
    """A cluster brought up with ``bootable`` (a many-node powered-down site) refuses to power up other nodes:
    the host cannot run thousands of slurmd, and the refusal sets the node DOWN with the reason.

    ``boot_delay``: seconds a resumed node takes to "boot" (slurmctld needs its boot time to be after
    the resume request, which it keeps in whole seconds)."""

    name = "local"
    workers = 4
    call_timeout = 30.0

    def __init__(self, cluster: str | Path, boot_delay: float = 2.0):
        from ..cluster.local import LocalCluster

        self.boot_delay = boot_delay
        self.cluster = LocalCluster(cluster)
        state = self.cluster.state()
        self.known = set(state.get("slurmd_ports", {}))
        bootable = state.get("bootable")  # a powered-down site: only these nodes may start a slurmd
        self.bootable = None if bootable is None else set(bootable)

    def power(self, host: str, on: bool) -> str:
        if host not in self.known:
            raise PowerError(f"{host} is not a node of the cluster at {self.cluster.root}")
        if on and self.bootable is not None and host not in self.bootable:
            # no host name in it: the nodes refused together share one reason, so one scontrol sets them DOWN
            raise PowerError(f"not bootable on this host: the cluster at {self.cluster.root} starts a slurmd only "
                             f"for its {len(self.bootable)} bootable node(s) (`cluster up --bootable`)")
        if on:
            pid = self.cluster.start_slurmd(host, boot_delay=self.boot_delay)
            return f"slurmd pid {pid}"
        if not self.cluster.stop_slurmd(host):
            raise PowerError("slurmd did not stop")
        return "slurmd stopped"
