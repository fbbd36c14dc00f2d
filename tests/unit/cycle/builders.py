"""Snapshots of the demo site for cycle tests: every node as its group defines it, overridden per node."""

from __future__ import annotations

from slurm_plugin.site import load_site
from slurm_plugin.snapshot import GresCount, JobState, NodeState, PartitionState, Snapshot

SITE = load_site("demo")


def demo_node(name: str, state: str = "idle", flags=(), alloc: int = 0) -> NodeState:
    """Node ``name`` of the demo site as its group defines it (CPUs, memory, features, GRES, partitions)."""
    g = next(g for g in SITE.node_groups if name in g.hostnames)
    return NodeState(name=name, state=state, flags=tuple(flags), cpus=g.cpu.cores, alloc_cpus=alloc,
                     memory_mb=g.memory_gb * 1024, features=g.all_features,
                     gres=tuple(GresCount(n, t, c) for n, t, c in g.gres),
                     partitions=tuple(p.name for p in SITE.partitions if g.name in p.node_groups))


def demo_snapshot(jobs=(), taken_at: float = 0.0, **nodes: NodeState) -> Snapshot:
    """Every demo node idle unless given by name; every partition with its groups' nodes."""
    every = {h: nodes.get(h) or demo_node(h) for g in SITE.node_groups for h in g.hostnames}
    parts = tuple(PartitionState(p.name, tuple(h for gn in p.node_groups for h in SITE.group(gn).hostnames),
                                 default=p.default) for p in SITE.partitions)
    return Snapshot(tuple(every.values()), parts, tuple(jobs), taken_at=taken_at)


def waiting(job_id: int, partition: str = "batch", features: str = "", cpus: int = 1, submit: float = 0.0,
            limit_min: int = 60, comment: str = "") -> JobState:
    """A pending job waiting for resources."""
    return JobState(job_id, "PENDING", partition=partition, features=features, cpus=cpus, node_count=1,
                    reason="Resources", submit_time=submit, time_limit_min=limit_min, comment=comment)
