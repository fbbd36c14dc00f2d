"""Classify text: one result per line that a signature matches (``hetsched health classify``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .generations import for_generation, generation
from .signatures import Library, Signature


@dataclass(frozen=True)
class LineMatch:
    """Line ``line_no`` (1-based) matched ``signature``."""

    line_no: int
    line: str
    signature: Signature

    def as_dict(self) -> dict:
        s = self.signature
        return {"line_no": self.line_no, "signature": s.id, "fault_class": s.fault_class, "severity": s.severity,
                "action": s.action}


def classify_lines(lib: Library, lines: Iterable[str], gpu_type: str | None = None) -> list[LineMatch]:
    """Every line that matches a signature, in order (lines that match none are left out); Xids read for the
    generation of ``gpu_type`` (e.g. ``h100``; :mod:`.generations`)."""
    text = [line.rstrip("\n") for line in lines]
    gen = generation(gpu_type)
    return [LineMatch(i + 1, text[i], for_generation(sig, gen)) for i, sig in lib.classify_all(text)]
