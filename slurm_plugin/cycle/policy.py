"""The live cycle built from a :class:`~slurm_plugin.policy.PolicySpec` (``hetsched cycle --policy-file F``).

Per choice (the simulator's counterparts are built by :mod:`slurm_plugin.sim.policy` from the same spec):

* ranking: ``dqn`` -> the DQN's live ranker (:func:`~slurm_plugin.rank.dqn.live.rank_pending`);
  ``multifactor`` -> Slurm's own priority, plus the age floor's SiteFactor when it is on; the heuristics ->
  the simulator's scorer on the pending jobs, its order as SiteFactor levels (:func:`~slurm_plugin.rank.live.rank_by`).
  The age floor is :class:`~slurm_plugin.rank.dqn.live.RankOptions`' ``age_floor_s`` (off: never).
* packing -> the pack step with the spec's time cap (or no pack step);
* scaling: ``always-on`` -> no power step; ``idle-timer`` -> the planner with no warm pool, architecture
  controller or PID and a grace of ``suspend_time_s``; ``planner`` -> the planner with the spec's parameters
  (with ``quiet_grace_s``: its demand-aware idle timer, no warm pool, architecture controller or PID).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from ..policy import PolicySpec, RankingSpec, ScalingSpec
from ..policy.capacity import policy_plan
from ..scale.planner import GroupLimits, ScaleConfig
from .decide import CycleConfig, cycle_steps
from .steps import CycleBudget, CycleStep, Ranker


def scale_config(spec: ScalingSpec, groups: Mapping[str, int] | None = None) -> ScaleConfig:
    """The planner's config for a scaling choice (``always-on`` has none: see :func:`cycle_config`). A
    ``capacity_plan`` file is read here and checked against ``groups``, the site's node group -> size
    (:func:`~slurm_plugin.policy.capacity.group_sizes`; a bad plan raises :class:`~slurm_plugin.policy.PolicyError`)."""
    if spec.name == "idle-timer":
        return ScaleConfig(idle_grace_s=spec.suspend_time_s, default_limits=GroupLimits(warm=0), wait_price_w=None,
                           arch=False, pid=False)
    plan = policy_plan(spec.capacity_plan, groups)
    if spec.quiet_grace_s is not None:
        return ScaleConfig(idle_grace_s=spec.grace_s, default_limits=GroupLimits(warm=0), wait_price_w=None,
                           quiet_grace_s=spec.quiet_grace_s, rate_window_s=spec.window_s, arch=False, pid=False)
    return ScaleConfig(idle_grace_s=spec.grace_s, target_util=spec.target_util,
                       default_limits=GroupLimits(warm=spec.warm_nodes), wait_price_w=spec.wait_price_w,
                       min_grace_s=spec.min_grace_s, rate_window_s=spec.window_s, arch=spec.arch, pid=spec.pid,
                       plan=plan)


def cycle_config(spec: PolicySpec, groups: Mapping[str, int] | None = None) -> CycleConfig:
    """The cycle's config for ``spec`` on a site with ``groups`` (node group -> size: what a capacity plan is
    checked against; needed only when the policy names one)."""
    return CycleConfig(pack=spec.packing.enabled, reshape=spec.reshape, power=spec.scaling.name != "always-on",
                       pack_time_cap_s=spec.packing.time_cap_s, scale=scale_config(spec.scaling, groups),
                       steps=spec.steps, budget=cycle_budget(spec))


def cycle_budget(spec: PolicySpec) -> CycleBudget | None:
    """The cycle's time budget of the policy's ``budget:`` section (None when it sets none)."""
    b = spec.budget
    steps = {name: getattr(b, f"{name}_s") for name in ("rank", "pack", "reshape", "power")
             if getattr(b, f"{name}_s") is not None}
    if b.decide_s is None and b.apply_s is None and b.cycle_s is None and not steps:
        return None
    return CycleBudget(b.decide_s, steps, b.apply_s, b.cycle_s)


def live_ranker(spec: RankingSpec, slurm_conf: str | Path | None = None) -> Ranker | None:
    """The rank step's ranker for a ranking choice (None: Slurm's own priority alone). ``slurm_conf``: what
    slurmctld validates (which ``--qos``/``--account`` grant a tier/class) and, with slurmdbd, the users'
    associations (as admission reads them, so the cycle's bands agree with admission's). A DQN model that cannot be loaded
    is reported here, once, and the cycle runs without ranking (as ``--model`` does)."""
    if spec.name == "multifactor" and not spec.age_floor:
        return None
    from ..admission.trust import Accounting
    from ..rank.dqn.live import RankOptions

    options = RankOptions(age_floor_s=spec.age_floor_hours * 3600.0 if spec.age_floor else math.inf,
                          accounting=Accounting.of_file(slurm_conf).with_associations(slurm_conf))
    if spec.name == "multifactor":
        from ..rank.live import age_floor_only

        return lambda snapshot, site, now: age_floor_only(snapshot, site, now, options)
    if spec.name == "dqn":
        from ..rank.dqn.live import rank_pending, resolve_model
        from ..rank.dqn.model import DEFAULT_MODEL

        model = resolve_model(spec.model or DEFAULT_MODEL)
        if model is None:
            return None
        return lambda snapshot, site, now: rank_pending(snapshot, model, site, now, options)
    from ..rank.live import rank_by
    from ..sim.hooks import ranking

    def ranker(snapshot, site, now):
        total = float(sum(n.cpus for n in snapshot.nodes)) or 1.0
        return rank_by(snapshot, ranking(spec.name, site, total, **spec.params()), site, now, options)

    return ranker


def policy_steps(spec: PolicySpec, slurm_conf: str | Path | None = None,
                 groups: Mapping[str, int] | None = None) -> tuple[CycleStep, ...]:
    """The cycle's steps for ``spec``, in order (``groups`` as in :func:`cycle_config`)."""
    return cycle_steps(cycle_config(spec, groups), live_ranker(spec.ranking, slurm_conf))
