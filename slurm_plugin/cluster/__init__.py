"""The real local multi-node Slurm cluster (plain processes on one host).

Only what the CLI's options name lives here (light: ``hetsched cluster --help`` imports nothing else); the cluster
itself is :class:`.local.LocalCluster`, the container cluster :mod:`.containers`."""

from pathlib import Path

DEFAULT_ROOT = Path("/var/lib/hetsched/cluster")  # the local cluster's state directory unless --root says otherwise


class ClusterError(RuntimeError):
    """The local cluster could not be brought to the asked state; the message says why and what to do."""
