"""The simulator's hooks built from a :class:`~slurm_plugin.policy.PolicySpec` (``hetsched sim run
--policy-file F``); the live cycle's steps come from the same spec (:mod:`slurm_plugin.cycle.policy`).

* ranking -> the registry's ranking (:func:`.hooks.ranking`; ``dqn`` with the spec's model), wrapped in
  :class:`~slurm_plugin.rank.dqn.policy.AgeFloor` when the age floor is on;
* scaling: ``always-on`` -> :class:`.hooks.AlwaysOn`; ``idle-timer`` -> :class:`.hooks.IdleSuspend`;
  ``planner`` -> :class:`~slurm_plugin.sim.scaling.WarmPoolPower` with the spec's parameters (the
  architecture controller reads the trace's portable demand);
* packing: on -> ``milp`` with the spec's time cap (needs a site); off -> Slurm's placement only.
The live-only ``reshape`` choice has no simulated counterpart (the simulator has no calendar).
"""

from __future__ import annotations

from ..policy import PackingSpec, PolicySpec, RankingSpec, ScalingSpec
from ..workload.jobs import JobTable
from .hooks import AlwaysOn, IdleSuspend, RankingPolicy, ScalingPolicy, ranking
from .machine import Machine
from .run import Outcome, Prepared, simulate


def sim_ranking(spec: RankingSpec, site=None, total_procs: float = 1.0) -> RankingPolicy:
    if spec.name == "dqn":
        from ..rank.dqn.policy import dqn_ranking

        inner = dqn_ranking(site, total_procs, spec.model)
    else:
        inner = ranking(spec.name, site, total_procs, **spec.params())
    if not spec.age_floor:
        return inner
    from ..rank.dqn.policy import AgeFloor

    return AgeFloor(inner, spec.age_floor_hours * 3600.0)


def sim_scaling(spec: ScalingSpec, machine: Machine, jobs: JobTable) -> ScalingPolicy:
    if spec.name == "always-on":
        return AlwaysOn()
    if spec.name == "idle-timer":
        return IdleSuspend(spec.suspend_time_s)
    from ..policy.capacity import group_sizes, policy_plan
    from .scaling import NodeArrivals, PortableDemand, WarmPoolPower

    if spec.quiet_grace_s is not None:  # the demand-aware idle timer reads only its graces and window
        return WarmPoolPower(machine, grace_s=spec.grace_s, wait_price_w=None, window_s=spec.window_s,
                             quiet_grace_s=spec.quiet_grace_s, demand=NodeArrivals(machine, jobs))
    return WarmPoolPower(machine, grace_s=spec.grace_s, wait_price_w=spec.wait_price_w, window_s=spec.window_s,
                         min_grace_s=spec.min_grace_s, target_util=spec.target_util, use_pid=spec.pid,
                         portable=PortableDemand(machine, jobs, spec.window_s) if spec.arch else None,
                         warm_nodes=spec.warm_nodes, plan=policy_plan(spec.capacity_plan, group_sizes(machine.groups)))


def sim_packing(spec: PackingSpec) -> tuple[str | None, dict]:
    """(name in ``hooks.PACKINGS`` or None, its arguments)."""
    return ("milp", {"time_cap_s": spec.time_cap_s}) if spec.enabled else (None, {})


def simulate_policy(p: Prepared, spec: PolicySpec, backfill: bool = True, progress=None,
                    sla: bool = False) -> tuple[dict, Outcome]:
    """One simulation of ``spec`` (Slurm semantics); the row also carries the spec itself (``policy_spec``).
    ``sla`` as in :func:`.run.simulate`."""
    if spec.packing.enabled and p.site is None:
        raise ValueError("the policy packs (packing.enabled) but the workload names no site: give --site, or set "
                         "packing: {enabled: false}")
    packing, packing_kw = sim_packing(spec.packing)
    row, out = simulate(p, sim_ranking(spec.ranking, p.site, float(p.machine.cores)), backfill, "slurm",
                        sim_scaling(spec.scaling, p.machine, p.workload.jobs), progress=progress, packing=packing,
                        packing_kw=packing_kw, sla=sla)
    row["policy_spec"] = spec.as_dict()
    return row, out


def compare_policies(p: Prepared, specs: list[tuple[str, PolicySpec]], backfills: list[bool] = (True,),
                     jobs: int | None = 1, on_row=None) -> tuple[list[dict], list[tuple[str, bool, dict]]]:
    """Each (label, spec) x backfill through :func:`simulate_policy` (``hetsched sim compare --policy-file F
    ...``); each row carries its label as ``policy_file``. Returns the rows and (label, backfill, timeline)."""
    from .parallel import run_all

    tasks = [(label, spec, bf) for bf in backfills for label, spec in specs]
    results = run_all(_one_policy, p, tasks, jobs, desc=p.workload.name,
                      on_result=(lambda i, res: on_row(res[0])) if on_row else None)
    return [row for row, _ in results], [(label, bf, tl) for (label, _, bf), (_, tl) in zip(tasks, results)]


def _one_policy(p: Prepared, task: tuple) -> tuple[dict, dict]:
    label, spec, bf = task
    row, out = simulate_policy(p, spec, bf)
    row["policy_file"] = label
    return row, out.timeline
