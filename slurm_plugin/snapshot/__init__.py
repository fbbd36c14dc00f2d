"""A frozen picture of the live cluster (nodes, partitions, jobs) read from Slurm's own commands.

Build one with :func:`collect_snapshot` (runs ``sinfo``/``squeue``/``scontrol`` through a
:class:`~slurm_plugin.slurm.SlurmClient`) or from already-fetched documents with :func:`build_snapshot`;
keep a fresh one in the background with :class:`SnapshotRefresher`. Every reader (admission, ranking,
packing, scaling) takes a :class:`Snapshot` as an argument and never calls Slurm itself.
"""

from .collect import ProcessCollector, SnapshotRefresher, build_snapshot, collect_snapshot, collect_snapshot_for
from .gres import GresCount, parse_gres, parse_tres_per_node
from .model import JobState, NodeState, PartitionState, Snapshot

__all__ = [
    "GresCount", "JobState", "ProcessCollector", "NodeState", "PartitionState", "Snapshot", "SnapshotRefresher", "build_snapshot",
    "collect_snapshot", "collect_snapshot_for", "parse_gres", "parse_tres_per_node",
]
