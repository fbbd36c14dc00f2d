"""The daemon's cycle: snapshot -> rank -> pack -> reshape -> power -> one Decision -> the applier."""

from .decide import CycleConfig, CycleMemory, decide
from .runner import CycleRunner

__all__ = ["CycleConfig", "CycleMemory", "CycleRunner", "decide"]
