"""The one interface every power backend implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class PowerResult:
    """Per-host outcome: ``done`` hosts reached the asked state (or were already there), ``failed`` maps
    a host to the reason it did not."""

    done: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


class PowerBackend(Protocol):
    """Powers nodes on and off. Both calls are idempotent: Slurm may ask twice for the same host."""

    name: str

    def resume(self, hosts: list[str]) -> PowerResult: ...

    def suspend(self, hosts: list[str]) -> PowerResult: ...
