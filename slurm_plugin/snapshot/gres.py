"""GRES strings as Slurm prints them, in both supported versions.

Node GRES (``gpu:a100:4(S:0-1)``, ``gpu:a100:0(IDX:N/A),npu:0``) and job requests (22.05
``gres:gpu:a100:1``, 24.11's scontrol ``gres/gpu:a100:1``, 23.02+ ``gres/gpu:a100=1``, or the plain ``--gres`` form
``gpu:1``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PAREN = re.compile(r"\([^)]*\)")


@dataclass(frozen=True, order=True)
class GresCount:
    """``count`` units of GRES ``name``; ``type`` is None for an untyped request or untyped node GRES."""

    name: str
    type: str | None
    count: int


def _split_top(text: str) -> list[str]:
    """Split on commas that are outside parentheses (``gpu:a100:4(S:0,1),npu:8``)."""
    return [p.strip() for p in re.split(r",(?![^(]*\))", _PAREN.sub(lambda m: m[0].replace(",", ";"), text))
            if p.strip()]


def _one(item: str) -> GresCount | None:
    item = _PAREN.sub("", item).strip()
    for prefix in ("gres:", "gres/"):
        if item.startswith(prefix):
            item = item[len(prefix):]
    if not item or item in ("(null)", "N/A"):
        return None
    if "=" in item:  # 23.02+: gres/gpu:a100=2
        head, _, num = item.partition("=")
        parts = head.split(":")
    else:
        parts = item.split(":")
        num = parts.pop() if len(parts) > 1 and parts[-1].isdigit() else "1"
    if not num.isdigit() or not parts or not parts[0]:
        raise ValueError(f"cannot read GRES item {item!r}")
    name = parts[0]
    gtype = parts[1] if len(parts) > 1 and parts[1] else None
    return GresCount(name, gtype, int(num))


def parse_gres(text: str | None) -> tuple[GresCount, ...]:
    """Every GRES item in a node's or job's GRES string; empty for None, '', '(null)' or 'N/A'.

    >>> parse_gres("gpu:a100:4(S:0-1),npu:0")
    (GresCount(name='gpu', type='a100', count=4), GresCount(name='npu', type=None, count=0))
    """
    if not text or text in ("(null)", "N/A"):
        return ()
    return tuple(g for g in (_one(i) for i in _split_top(text)) if g is not None)


def parse_tres_per_node(text: str | None) -> tuple[GresCount, ...]:
    """A job's per-node GRES request; TRES that are not GRES (``cpu``, ``mem``) are dropped."""
    return tuple(g for g in parse_gres(text) if g.name not in ("cpu", "mem", "node", "billing"))
