"""Small packing problems with optima worked out by hand: documentation of the objective, and test cases.

All use ``PARAMS`` (band weight 2^band, half-life 600 s, cost weight 1) and prices chosen so the arithmetic
is exact. Each example states its hand computation; ``optimum`` and ``greedy`` are those figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import JobShape, NodeClass, PackingParams, PackingProblem, Pool, Resources

PARAMS = PackingParams(band_base=2.0, half_life_s=600.0, cost_weight=1.0)


@dataclass(frozen=True)
class Example:
    name: str
    problem: PackingProblem
    optimum: float
    greedy: float
    started: int
    booted: int
    why: str


def cpu_pool(name: str, cpus: float, free: float | None = None, down: int = 0, boot_s: float = 0.0,
             price: float = 0.0, mem_per_cpu: float = 4.0) -> Pool:
    """A CPU-only pool of nodes with ``cpus`` cores; ``free`` cores free now (default: one node's worth)."""
    free = cpus if free is None else free
    return Pool(name=name, per_node=Resources(cpus, cpus * mem_per_cpu, 0.0),
                free_now=Resources(free, free * mem_per_cpu, 0.0), down_nodes=down, boot_time_s=boot_s,
                cost_per_hour=price)


def cpu_class(name: str, pool: str, arch: str = "x86_64", speed: float = 1.0, workload: str = "web") -> NodeClass:
    return NodeClass(name=name, partition=name.split("/")[0], arch=arch, accel_type=None, pool=pool,
                     features=(arch,), speed=((workload, speed),))


def cpu_shape(key: str, cpus: float, count: int, band: int, allowed: tuple[str, ...], hours: float = 1.0,
              mem_gb: float | None = None, workload: str = "web") -> JobShape:
    return JobShape(key=key, per_job=Resources(cpus, cpus * 2 if mem_gb is None else mem_gb, 0.0), hours=hours,
                    workload=workload, band=band, allowed=frozenset(allowed), count=count)


def _problem(pools, classes, shapes) -> PackingProblem:
    return PackingProblem(pools=tuple(pools), classes=tuple(classes), shapes=tuple(shapes), params=PARAMS)


EXAMPLES: tuple[Example, ...] = (
    Example(
        "faster-class-wins",
        _problem([cpu_pool("x86", 16), cpu_pool("arm", 16)],
                 [cpu_class("batch/x86", "x86", speed=1.0), cpu_class("batch/arm", "arm", "aarch64", speed=0.8)],
                 [cpu_shape("web8", 8, 2, band=0, allowed=("batch/x86", "batch/arm"))]),
        optimum=2.0, greedy=2.0, started=2, booted=0,
        why="free pools, no cost: both 8-core jobs fit on x86 at speed 1.0 -> 2 x 1.0 = 2.0 (arm would give 0.8)"),
    Example(
        "greedy-blocks-the-big-job",
        _problem([cpu_pool("x", 16), cpu_pool("y", 8)],
                 [cpu_class("p/x", "x", speed=1.0), cpu_class("p/y", "y", speed=0.9)],
                 [cpu_shape("small", 8, 1, band=1, allowed=("p/x", "p/y")),
                  cpu_shape("big", 16, 1, band=0, allowed=("p/x",))]),
        optimum=2.8, greedy=2.0, started=2, booted=0,
        why="greedy puts the band-1 8-core job on x (2 x 1.0 = 2.0) and the 16-core job no longer fits; the "
            "optimum puts it on y (2 x 0.9 = 1.8) and the big job on x (1 x 1.0): 2.8"),
    Example(
        "shared-pool-is-shared",
        _problem([cpu_pool("x86", 16)],
                 [cpu_class("batch/x86", "x86"), cpu_class("x86/x86", "x86")],
                 [cpu_shape("a", 8, 2, band=1, allowed=("batch/x86",)), cpu_shape("b", 8, 2, band=0,
                                                                               allowed=("x86/x86",))]),
        optimum=4.0, greedy=4.0, started=2, booted=0,
        why="two partitions over one 16-core pool: only two 8-core jobs fit in total; the band-1 ones (2 x 2)"),
    Example(
        "memory-binds",
        _problem([cpu_pool("x86", 16, mem_per_cpu=2.0)], [cpu_class("p/x86", "x86")],
                 [cpu_shape("fat", 2, 5, band=0, allowed=("p/x86",), mem_gb=12)]),
        optimum=2.0, greedy=2.0, started=2, booted=0,
        why="32 GB free: two 12 GB jobs fit although 16 cores would take eight 2-core jobs"),
    Example(
        "boot-only-what-pays",
        _problem([cpu_pool("cold", 8, free=0, down=2, boot_s=600, price=6.0)], [cpu_class("p/cold", "cold")],
                 [cpu_shape("j", 4, 3, band=1, allowed=("p/cold",), hours=0.1)]),
        optimum=0.4, greedy=0.1, started=2, booted=1,
        why="value 2 x 2^(-600/600) = 1.0, cost 6 x 4/8 x 0.1 = 0.3, net 0.7/job; a boot costs 6 x 600/3600 = 1.0."
            " Two jobs per node: 1 node -> 2 x 0.7 - 1 = 0.4; 2 nodes -> 3 x 0.7 - 2 = 0.1 (what greedy does)"),
    Example(
        "nothing-worth-starting",
        _problem([cpu_pool("cold", 8, free=0, down=1, boot_s=600, price=60.0)], [cpu_class("p/cold", "cold")],
                 [cpu_shape("j", 8, 1, band=0, allowed=("p/cold",))]),
        optimum=0.0, greedy=0.0, started=0, booted=0,
        why="value 1 x 0.5 = 0.5 < cost 60 x 1 x 1 = 60: no option is created, nothing starts"),
)
