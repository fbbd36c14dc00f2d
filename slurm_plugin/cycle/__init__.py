"""The daemon's cycle: snapshot -> rank -> pack -> reshape -> power -> guard -> one Decision -> the applier."""

from . import dag_step, guard  # noqa: F401  (register the "dag" and "guard" steps)
from .decide import CycleConfig, CycleMemory, decide
from .runner import CycleRunner

__all__ = ["CycleConfig", "CycleMemory", "CycleRunner", "decide"]
