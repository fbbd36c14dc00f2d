"""The one error a bad site file raises: every problem, each with file, field path and what was expected."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import PicklableError

Loc = Sequence[str | int]


def format_loc(loc: Loc) -> str:
    """``('clusters', 0, 'node_groups', 2, 'gpu', 'count')`` -> ``clusters[0].node_groups[2].gpu.count``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


@dataclass(frozen=True)
class Problem:
    loc: tuple[str | int, ...]
    message: str

    @property
    def path(self) -> str:
        return format_loc(self.loc)


class SiteError(PicklableError, ValueError):
    """A site file that cannot be used. ``str()`` gives one line per problem: ``FILE: PATH: MESSAGE``."""

    def __init__(self, source: str, problems: Iterable[Problem]):
        self.source = source
        self.problems = tuple(problems)
        lines = [f"{source}: {p.path}: {p.message}" for p in self.problems]
        head = f"{source}: {len(self.problems)} problem(s) in site description" if len(lines) > 1 else None
        super().__init__("\n".join(([head] if head else []) + lines))
