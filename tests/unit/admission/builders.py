"""Builders for admission tests: a small cluster snapshot shaped like the demo site, in memory."""

from __future__ import annotations

from dataclasses import replace

from slurm_plugin.snapshot import GresCount, NodeState, PartitionState, Snapshot


def node(name: str, arch: str, cpus: int = 64, used: int = 0, mem: int = 131072, gres: str = "",
         state: str = "idle", flags: tuple[str, ...] = ()) -> NodeState:
    items = []
    for item in filter(None, gres.split(",")):
        gname, gtype, count = item.split(":")
        items.append(GresCount(gname, gtype, int(count)))
    return NodeState(name=name, state=state if not used or used < cpus else "allocated", flags=flags, cpus=cpus,
                     alloc_cpus=used, memory_mb=mem, features=(arch,), gres=tuple(items))


def demo(**changes: NodeState) -> Snapshot:
    """The demo site's nodes and partitions, all idle; ``changes`` replaces nodes by name."""
    nodes = {n.name: n for n in [
        node("x86n1", "x86_64", 16), node("x86n2", "x86_64", 16),
        node("armn1", "aarch64"), node("armn2", "aarch64"), node("armn3", "aarch64"),
        node("rvn1", "riscv64"),
        node("a100n1", "x86_64", 32, gres="gpu:a100:4"), node("gh200n1", "aarch64", 72, gres="gpu:h100:4"),
        node("npun1", "aarch64", 48, gres="npu:ascend910b:8"), node("dpun1", "x86_64", 16, gres="dpu:bluefield3:1"),
    ]}
    nodes.update(changes)
    parts = [
        PartitionState("batch", ("armn1", "armn2", "armn3", "x86n1", "x86n2"), default=True, max_time_min=1440),
        PartitionState("x86", ("x86n1", "x86n2"), max_time_min=1440),
        PartitionState("arm", ("armn1", "armn2", "armn3"), max_time_min=1440),
        PartitionState("riscv", ("rvn1",), max_time_min=1440),
        PartitionState("gpu", ("a100n1", "gh200n1"), max_time_min=2880),
        PartitionState("npu", ("npun1",), max_time_min=2880),
        PartitionState("dpu", ("dpun1",), max_time_min=720),
    ]
    return Snapshot(nodes=tuple(nodes.values()), partitions=tuple(parts), taken_at=1.0)


def busy(name: str, arch: str, cpus: int = 64, **kw) -> NodeState:
    """A node with every CPU allocated."""
    return node(name, arch, cpus, used=cpus, **kw)


def drained(n: NodeState) -> NodeState:
    return replace(n, flags=("drain",))
