"""The daemon's cycle: snapshot -> rank -> pack -> reshape -> power -> guard -> one Decision -> the applier.

Names are imported on first use (:func:`~slurm_plugin._lazy.lazy_exports`): reading the cycle's state file
(``hetsched status``) does not import the steps; the steps that register themselves (``dag``, ``guard``) are
imported when a step is first made (:func:`.steps.make_step`). The pure decision is
``slurm_plugin.cycle.decide.decide``: once its module is imported, ``slurm_plugin.cycle.decide`` names the module."""

from .._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, globals(), {
    ".decide": ["CycleConfig", "CycleMemory"],  # decide() itself: from .decide (the name is its module's here)
    ".runner": ["CycleRunner"],
})
