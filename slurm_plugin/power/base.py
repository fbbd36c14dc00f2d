"""The one interface every power backend implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class BmcConfigError(ValueError):
    """A node's BMC settings cannot be used (site ``bmc`` section or its credentials file); says which."""


def read_credentials(path: str | None) -> tuple[str, str] | None:
    """``user:password`` from the first line of ``path`` (a BMC ``credentials_file``); None if no file is set."""
    if not path:
        return None
    try:
        with open(path) as fh:
            user, sep, password = fh.readline().rstrip("\n").partition(":")
    except OSError as err:
        raise BmcConfigError(f"BMC credentials file {path}: {err.strerror}") from None
    if not sep:
        raise BmcConfigError(f"{path}: expected 'user:password' on the first line")
    return user, password


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
