"""The free capacity of each cluster of a Slurm federation, as admission's follow-the-sun routing reads it.

:func:`parse_capacity` is pure (``sinfo -M CLUSTER -h -N -o '%n|%C'`` text in); :func:`read_view` asks every
member's controller through slurmdbd (``sinfo -M``), one member at a time so one that does not answer is
marked unreachable without hiding the others; :class:`FederationRefresher` keeps a :class:`FederationView`
fresh from a background thread, so the request path only reads memory.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..slurm import SlurmClient, SlurmError
from .collect import SnapshotRefresher


@dataclass(frozen=True)
class MemberCapacity:
    """One member's idle CPUs and how many of its nodes have any (``sinfo``'s %C idle count, per node)."""

    free_cpus: int
    free_nodes: int


@dataclass(frozen=True)
class FederationView:
    """Each member as last read: its capacity, or None when its controller did not answer then. A member
    missing from ``members`` has not been read yet. ``read_at``: ``time.time()`` of the read."""

    members: dict[str, MemberCapacity | None] = field(default_factory=dict)
    read_at: float = 0.0

    def age_s(self) -> float:
        return time.time() - self.read_at if self.read_at else float("inf")


def parse_capacity(text: str) -> MemberCapacity:
    """Sum ``sinfo -h -N -o '%n|%C'`` rows (node|allocated/idle/other/total), each node once (``-N`` lists a
    node once per partition). Rows that are not of that form raise ValueError naming the row."""
    idle: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            node, cpus = line.split("|")
            idle[node] = int(cpus.split("/")[1])
        except (ValueError, IndexError):
            raise ValueError(f"sinfo row {n} is not 'node|A/I/O/T': {line[:80]!r}") from None
    return MemberCapacity(sum(idle.values()), sum(1 for v in idle.values() if v > 0))


def read_view(client: SlurmClient, clusters: list[str]) -> FederationView:
    """Read every member (``sinfo -M NAME``); a member whose controller does not answer is None."""
    members: dict[str, MemberCapacity | None] = {}
    for name in clusters:
        try:
            members[name] = parse_capacity(client.run("sinfo", "-M", name, "-h", "-N", "-o", "%n|%C").stdout)
        except (SlurmError, OSError, ValueError):
            members[name] = None
    return FederationView(members, time.time())


class FederationRefresher(SnapshotRefresher):
    """:class:`FederationView` every ``interval`` seconds in a daemon thread (readers take ``current``)."""

    def __init__(self, client: SlurmClient, clusters: list[str], interval: float):
        super().__init__(lambda: read_view(client, clusters), interval)
        self.current = FederationView()
