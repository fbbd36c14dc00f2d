"""Seeded synthetic packing instances for the benchmark and property tests (pure, no site file).

An instance has ``n_classes`` classes over about 0.8 x ``n_classes`` pools (the rest are second partitions
over an existing pool, so classes really compete for capacity), six workload classes with the speed factors of
the demo site, and ``n_jobs`` pending jobs drawn from ``n_jobs // 10`` job templates with Zipf-like popularity
(queues repeat themselves: arrays, resubmissions), so shapes aggregate as they would in a real queue. Capacity
is sized so that about half of the demand fits now and a third more after booting powered-down nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .aggregate import aggregate
from .model import NodeClass, PackingParams, PackingProblem, PendingJob, Pool, Resources

CPU_ARCHES = ("x86_64", "aarch64", "riscv64")
ACCEL_TYPES = ("a100", "h100", "mi250", "ascend910b")
ACCEL_ARCH = {"a100": "x86_64", "h100": "aarch64", "mi250": "x86_64", "ascend910b": "aarch64"}
# workload -> speed per arch or accelerator type (0: cannot run); accelerator workloads run only on accelerators.
SPEEDS: dict[str, dict[str, float]] = {
    "ai-training": {"a100": 1.0, "h100": 2.0, "mi250": 0.9, "ascend910b": 0.8},
    "inference": {"a100": 1.0, "h100": 1.5, "mi250": 1.0, "ascend910b": 0.9},
    "video": {"x86_64": 1.0, "aarch64": 0.9, "riscv64": 0.0},
    "web": {"x86_64": 1.0, "aarch64": 0.8, "riscv64": 0.5},
    "hpc": {"x86_64": 1.0, "aarch64": 1.1, "riscv64": 0.3},
    "batch": {"x86_64": 1.0, "aarch64": 1.0, "riscv64": 1.0},
}
ACCEL_WORKLOADS = ("ai-training", "inference")
COST = {"x86_64": 0.8, "aarch64": 0.55, "riscv64": 0.3, "a100": 12.0, "h100": 22.0, "mi250": 10.0, "ascend910b": 9.0}


@dataclass(frozen=True)
class Instance:
    """A generated problem plus the pending jobs it was aggregated from."""

    problem: PackingProblem
    jobs: tuple[PendingJob, ...]


def _speed(workload: str, arch: str, accel: str | None) -> float:
    table = SPEEDS[workload]
    if workload in ACCEL_WORKLOADS:
        return table.get(accel, 0.0) if accel else 0.0
    return table.get(arch, 1.0)


def _classes(rng: np.random.Generator, n_classes: int) -> tuple[list[tuple[str, str, str | None]], list[NodeClass]]:
    """(pool name, arch, accel) per pool and the classes over them."""
    n_pools = max(1, int(round(0.8 * n_classes)))
    n_parts = max(3, n_classes // 5)
    pools, classes = [], []
    for i in range(n_pools):
        accel = str(rng.choice(ACCEL_TYPES)) if rng.random() < 0.4 else None
        arch = ACCEL_ARCH[accel] if accel else str(rng.choice(CPU_ARCHES, p=[0.5, 0.35, 0.15]))
        pools.append((f"pool{i:02d}", arch, accel))
    for i in range(n_classes):
        pool, arch, accel = pools[i] if i < n_pools else pools[int(rng.integers(n_pools))]
        part = f"part{i % n_parts}" if i < n_pools else f"shared{i % 3}"
        speed = tuple((w, _speed(w, arch, accel)) for w in SPEEDS)
        classes.append(NodeClass(name=f"{part}/{pool}", partition=part, arch=arch, accel_type=accel, pool=pool,
                                 features=(arch,) + ((accel,) if accel else ()), speed=speed))
    return pools, classes


def _templates(rng: np.random.Generator, n: int, classes: list[NodeClass]) -> list[PendingJob]:
    partitions = sorted({c.partition for c in classes})
    out = []
    for t in range(n):
        workload = str(rng.choice(list(SPEEDS)))
        if workload in ACCEL_WORKLOADS:
            accels = float(rng.choice([1, 2, 4, 8]))
            res = Resources(cpus=8 * accels, mem_gb=32 * accels, accels=accels)
        else:
            cpus = float(rng.choice([1, 2, 4, 8, 16, 32]))
            res = Resources(cpus=cpus, mem_gb=cpus * float(rng.choice([2, 4, 8])), accels=0.0)
        k = int(rng.integers(1, 5))
        parts = tuple(sorted(rng.choice(partitions, size=min(k, len(partitions)), replace=False).tolist()))
        out.append(PendingJob(job_id=f"t{t}", per_job=res, hours=float(rng.choice([0.5, 1, 2, 4, 8, 24])),
                              workload=workload, band=int(rng.integers(0, 8)), partitions=parts,
                              pinned=bool(k == 1 and rng.random() < 0.3)))
    return out


def _pools(rng: np.random.Generator, specs: list[tuple[str, str, str | None]], jobs: list[PendingJob]) -> list[Pool]:
    """Size pools so about half the demand fits now and a third more after booting."""
    cpu_demand = sum(j.per_job.cpus for j in jobs if j.per_job.accels == 0)
    acc_demand = sum(j.per_job.accels for j in jobs)
    n_cpu = max(1, sum(1 for _, _, a in specs if a is None))
    n_acc = max(1, len(specs) - n_cpu)
    pools = []
    for name, arch, accel in specs:
        node = (Resources(64.0, 512.0, float(rng.choice([4, 8]))) if accel
                else Resources(float(rng.choice([32, 64, 128])), 0.0, 0.0))
        if not accel:
            node = Resources(node.cpus, node.cpus * 4, 0.0)
        share = rng.uniform(0.5, 1.5) * 0.83 * (acc_demand / n_acc if accel else cpu_demand / n_cpu)
        nodes = max(1, int(round(share / (node.accels if accel else node.cpus))))
        down = int(round(nodes * 0.4))
        busy = rng.uniform(0.0, 0.5)
        up = nodes - down
        free = Resources(*(v * up * (1 - busy) for v in node.as_tuple()))
        pools.append(Pool(name=name, per_node=node, free_now=free, down_nodes=down,
                          boot_time_s=float(rng.choice([60, 120, 180, 300])),
                          cost_per_hour=COST[accel or arch]))
    return pools


def generate(n_jobs: int, n_classes: int, seed: int = 0, params: PackingParams | None = None) -> Instance:
    """A reproducible instance with ``n_jobs`` pending jobs over ``n_classes`` node classes."""
    rng = np.random.default_rng([seed, n_jobs, n_classes])
    specs, classes = _classes(rng, n_classes)
    templates = _templates(rng, max(5, n_jobs // 10), classes)
    popularity = 1.0 / np.arange(1, len(templates) + 1) ** 0.8
    picks = rng.choice(len(templates), size=n_jobs, p=popularity / popularity.sum())
    jobs = tuple(PendingJob(**{**templates[t].__dict__, "job_id": str(1000 + i)}) for i, t in enumerate(picks))
    pools = _pools(rng, specs, list(jobs))
    shapes, _ = aggregate(jobs, classes)
    problem = PackingProblem(pools=tuple(pools), classes=tuple(classes), shapes=shapes,
                             params=params or PackingParams())
    return Instance(problem=problem, jobs=jobs)
