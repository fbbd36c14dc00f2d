"""Columnar job table: one numpy array per field, so rankings and the simulator work on whole queues at once.

Units: seconds, GB of memory per node, cores and GRES per node. ``arch_mask`` is a bitmask over
:data:`slurm_plugin.site.ARCHES` (0 = any arch); ``gres_name``/``gres_type`` index ``JobTable.gres_names`` /
``gres_types`` (-1 = none / any type). A ``gres_types`` entry ``"a|b"`` means any one of those types (in Slurm:
an untyped ``--gres=gpu:N`` plus ``--constraint="a|b"`` on the type features every GPU node carries).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

from ..site import ARCHES, Site

ARCH_BIT = {a: 1 << i for i, a in enumerate(ARCHES)}


def arch_mask(archs: tuple[str, ...] | list[str]) -> int:
    """Bitmask of a set of arch names (empty = any)."""
    return sum(ARCH_BIT[a] for a in set(archs))


@dataclass
class JobTable:
    """All jobs of a workload, sorted by submit time. Every array has one entry per job."""

    id: np.ndarray
    submit: np.ndarray
    run: np.ndarray
    limit: np.ndarray
    nodes: np.ndarray
    cores: np.ndarray
    mem_gb: np.ndarray
    gres_name: np.ndarray
    gres_type: np.ndarray
    gres_count: np.ndarray
    arch_mask: np.ndarray
    user: np.ndarray
    wclass: np.ndarray
    qos_priority: np.ndarray
    gres_names: tuple[str, ...] = ()
    gres_types: tuple[str, ...] = ()
    class_names: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.id)

    @property
    def procs(self) -> np.ndarray:
        """Total cores requested (nodes x cores per node)."""
        return self.nodes * self.cores

    @classmethod
    def build(cls, rows: dict[str, list], **names) -> JobTable:
        """Build from column lists; missing optional columns get defaults; rows are sorted by submit, id."""
        n = len(rows["submit"])
        dtypes = dict(id=np.int64, submit=np.float64, run=np.float64, limit=np.float64, nodes=np.int64,
                      cores=np.int64, mem_gb=np.float64, gres_name=np.int16, gres_type=np.int16,
                      gres_count=np.int64, arch_mask=np.int16, user=np.int64, wclass=np.int16,
                      qos_priority=np.float64)
        defaults = dict(id=np.arange(1, n + 1), mem_gb=0.0, gres_name=-1, gres_type=-1, gres_count=0,
                        arch_mask=0, user=-1, wclass=-1, qos_priority=0.0)
        cols = {}
        for name, dt in dtypes.items():
            if name in rows:
                cols[name] = np.asarray(rows[name], dtype=dt)
            else:
                cols[name] = np.broadcast_to(np.asarray(defaults[name], dtype=dt), (n,)).copy()
        table = cls(**cols, **names)
        return table.take(np.lexsort((table.id, table.submit)))

    def take(self, idx: np.ndarray) -> JobTable:
        """A new table of the rows ``idx`` (in that order)."""
        arrays = {f.name: getattr(self, f.name)[idx] for f in fields(self) if f.name not in _NAME_FIELDS}
        return replace(self, **arrays)

    def gres_type_options(self, i: int) -> frozenset[str] | None:
        """The GRES types job ``i`` accepts (None = any type)."""
        if self.gres_type[i] < 0:
            return None
        return frozenset(self.gres_types[self.gres_type[i]].split("|"))

    def gres_label(self, i: int) -> str:
        if self.gres_name[i] < 0:
            return ""
        t = f":{self.gres_types[self.gres_type[i]]}" if self.gres_type[i] >= 0 else ""
        return f"{self.gres_names[self.gres_name[i]]}{t}:{self.gres_count[i]}"


_NAME_FIELDS = {"gres_names", "gres_types", "class_names"}


@dataclass
class Workload:
    """A job table plus where it came from. ``machine`` is ``(nodes, cores_per_node)`` when the source names
    its own homogeneous machine (an SWF header), else None. ``skipped`` counts records not turned into jobs,
    by reason (never silent); ``dropped`` lists (job id, reason) of jobs removed by ``--drop-unfit``;
    ``adjusted`` counts jobs whose request was changed to fit Slurm's model, by reason (e.g. a fractional GPU
    rounded up). ``site`` is the heterogeneous machine the source itself describes (the OpenB node list), used
    when no site is given, like ``machine`` for an SWF header. ``recorded_wait`` maps a job id to the wait the
    history recorded (start - submit: the SWF wait field, sacct Start, OpenB scheduled_time), for the jobs that
    have one: what the twin's fidelity check compares its replay with."""

    name: str
    jobs: JobTable
    machine: tuple[int, int] | None = None
    skipped: dict[str, int] = field(default_factory=dict)
    dropped: list[tuple[int, str]] = field(default_factory=list)
    adjusted: dict[str, int] = field(default_factory=dict)
    site: Site | None = None
    compress: float = 1.0  # submit times were divided by this (see slurm_plugin.sim.run.prepare)
    recorded_wait: dict[int, float] = field(default_factory=dict)
