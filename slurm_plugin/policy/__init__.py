"""One policy for the live cycle and the simulator: :class:`PolicySpec` (ranking, packing, scaling choices and
their parameters), loaded from a policy file. Builders: ``cycle.policy`` (live steps), ``sim.policy`` (hooks)."""

from .spec import (RANKINGS, SCALINGS, PackingSpec, PolicyError, PolicySpec, RankingSpec, ScalingSpec, load_policy,
                   policy_from_dict)
from .twin import OBJECTIVES, TwinHistory, TwinMetrics, TwinRunnerUp, TwinSection, twin_from_dict

__all__ = ["PackingSpec", "PolicyError", "PolicySpec", "RANKINGS", "RankingSpec", "SCALINGS", "ScalingSpec",
           "load_policy", "policy_from_dict", "OBJECTIVES", "TwinHistory", "TwinMetrics", "TwinRunnerUp", "TwinSection",
           "twin_from_dict"]
