"""Discrete-event simulator of one Slurm cluster (site file or SWF machine), with pluggable ranking,
placement and scaling policies (:mod:`.hooks`), EASY backfill and node power accounting.

Entry points: :func:`.run.prepare` + :func:`.run.simulate` (one result row), :func:`.compare.compare`,
:class:`.engine.Engine` (Slurm-like), :class:`.rlsched.SelectThenWait` (RLScheduler's semantics).
"""

from .engine import Engine, Outcome
from .hooks import (PlacementPolicy, PowerView, RankingPolicy, ScalingPolicy, placement, ranking,
                    register_placement, register_ranking, register_scaling, scaling)
from .machine import GroupSpec, Machine, homogeneous, machine_from_site
from .rlsched import SelectThenWait
from .run import prepare, simulate

__all__ = ["Engine", "GroupSpec", "Machine", "Outcome", "PlacementPolicy", "PowerView", "RankingPolicy",
           "ScalingPolicy", "SelectThenWait", "homogeneous", "machine_from_site", "placement", "prepare",
           "ranking", "register_placement", "register_ranking", "register_scaling", "scaling", "simulate"]
