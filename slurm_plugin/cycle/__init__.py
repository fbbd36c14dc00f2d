"""The daemon's cycle: snapshot -> rank -> pack -> reshape -> power -> guard -> one Decision -> the applier."""

from . import guard  # noqa: F401  (registers the "guard" step)
from .decide import CycleConfig, CycleMemory, decide
from .runner import CycleRunner

__all__ = ["CycleConfig", "CycleMemory", "CycleRunner", "decide"]
