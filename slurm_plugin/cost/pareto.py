"""The cost/performance Pareto front of a capacity plan, two ways on the same instance.

* ``milp``: the epsilon-constraint method on :class:`~.plan_milp.PlanMilp`: the two ends (least job-hours, then
  least cost at that; least cost, then least job-hours at that), then least cost with job-hours <= eps for
  ``points - 2`` values of eps evenly between the ends. Each point is optimal (HiGHS, ``rel_gap``).
* ``nsga2``: pymoo's NSGA-II over the nodes-on matrix (one integer per group and hour); each candidate is
  dispatched by :func:`dispatch` (every hour, the most urgent class first onto its fastest group with nodes on),
  which gives a feasible plan of the same model, so both fronts are measured in the same two objectives. The
  tier targets and the work left at the end are constraints (the MILP's bounds). It gets the same CPU time the
  MILP front took.

Hypervolume: both fronts normalised by the ideal and nadir of their union, reference point (1.1, 1.1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .plan_milp import PlanMilp, PlanSolution
from .plan_model import PlanInstance


@dataclass(frozen=True)
class Front:
    method: str
    points: np.ndarray  # (n, 2): cost, job_hours (non-dominated, by cost)
    wall_s: float
    cpu_s: float
    evaluations: int = 0

    def as_dict(self, hypervolume: float) -> dict:
        return {"method": self.method, "hypervolume": round(hypervolume, 6), "points": len(self.points),
                "wall_s": round(self.wall_s, 3), "cpu_s": round(self.cpu_s, 3), "evaluations": self.evaluations,
                "front": [[round(float(c), 4), round(float(j), 4)] for c, j in self.points]}


def nondominated(points: np.ndarray) -> np.ndarray:
    """The points no other point is at least as good as in both objectives (and better in one), by cost."""
    if len(points) == 0:
        return points.reshape(0, 2)
    pts = np.unique(np.round(points, 9), axis=0)
    pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]
    keep, best = [], np.inf
    for p in pts:
        if p[1] < best - 1e-9:
            keep.append(p)
            best = p[1]
    return np.array(keep)


def hypervolume(front: np.ndarray, ideal: np.ndarray, nadir: np.ndarray, ref: float = 1.1) -> float:
    """2-D hypervolume of ``front`` (minimised) after normalising to [0, 1] by ``ideal``/``nadir``."""
    if len(front) == 0:
        return 0.0
    span = np.where(nadir - ideal > 0, nadir - ideal, 1.0)
    f = nondominated((front - ideal) / span)
    f = f[(f[:, 0] < ref) & (f[:, 1] < ref)]
    area, top = 0.0, ref
    for c, j in f:  # by cost ascending, job-hours descending
        area += (ref - c) * (top - j)
        top = j
    return float(area)


def milp_front(milp: PlanMilp, points: int = 12, time_limit_s: float = 60.0, rel_gap: float = 1e-6
               ) -> tuple[Front, list[PlanSolution]]:
    """The epsilon-constraint front (see the module docstring) and the plans behind it."""
    t0, c0 = time.perf_counter(), time.process_time()
    tol = lambda v: v * (1 + 1e-7) + 1e-7  # noqa: E731
    solve = lambda *a, **k: milp.solve(*a, time_limit_s=time_limit_s, rel_gap=rel_gap, **k)  # noqa: E731
    fast = solve("job_hours")
    fast = solve("cost", max_job_hours=tol(fast.job_hours))
    cheap = solve("cost")
    cheap = solve("job_hours", max_cost=tol(cheap.cost))
    plans = [fast, cheap]
    for eps in np.linspace(fast.job_hours, cheap.job_hours, max(points, 2))[1:-1]:
        sol = solve("cost", max_job_hours=tol(eps))
        if sol is not None:
            plans.append(sol)
    pts = nondominated(np.array([[p.cost, p.job_hours] for p in plans]))
    return Front("milp", pts, time.perf_counter() - t0, time.process_time() - c0), plans


def dispatch(inst: PlanInstance, on: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    """Serve the work on the nodes ``on`` (G, H): each hour, classes by max_wait (shortest first), each onto its
    groups fastest first, oldest work first. Returns (cost, job_hours, late per class, left per class)."""
    C, G, H = len(inst.classes), len(inst.groups), inst.hours
    order = np.argsort(inst.max_wait_h, kind="stable")
    groups_by_speed = [[g for g in np.argsort(-inst.speed[c], kind="stable") if inst.speed[c, g] > 0]
                       for c in range(C)]
    queue = np.zeros((C, H))
    late = np.zeros(C)
    busy = np.zeros((G, H))
    waiting = 0.0
    for t in range(H):
        queue[:, t] = inst.demand[:, t]
        cap = on[:, t].astype(float).copy()
        for c in order:
            want = queue[c, :t + 1].sum()
            if want <= 1e-12:
                continue
            served = 0.0
            for g in groups_by_speed[c]:
                if cap[g] <= 1e-12:
                    continue
                s = inst.speed[c, g]
                take = min(cap[g], (want - served) / s)
                cap[g] -= take
                busy[g, t] += take
                served += take * s
                if served >= want - 1e-12:
                    break
            if served > 0:  # oldest first
                cum = np.cumsum(queue[c, :t + 1])
                left = np.maximum(cum - served, 0.0)
                queue[c, :t + 1] = np.diff(np.concatenate([[0.0], left]))
        waiting += queue[:, :t + 1].sum()
        for c in range(C):
            w = int(inst.max_wait_h[c])
            if t - w >= 0:
                late[c] += queue[c, :t - w + 1].sum()
    left = queue.sum(axis=1)
    # busy work per group is summed over classes, as the MILP's y
    cost = float((on * inst.on_cost).sum() + (busy * inst.busy_cost).sum() + (late * inst.penalty).sum())
    return cost, float(waiting + busy.sum()), late, left


def nsga2_front(milp: PlanMilp, cpu_budget_s: float, pop_size: int = 60, seed: int = 1, max_gen: int = 2000
                ) -> Front:
    """NSGA-II on the nodes-on matrix for ``cpu_budget_s`` of CPU time (see the module docstring)."""
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.core.problem import ElementwiseProblem
    from pymoo.core.termination import Termination
    from pymoo.operators.crossover.sbx import SBX
    from pymoo.operators.mutation.pm import PM
    from pymoo.operators.repair.rounding import RoundingRepair
    from pymoo.operators.sampling.rnd import IntegerRandomSampling
    from pymoo.optimize import minimize

    inst = milp.inst
    G, H = len(inst.groups), inst.hours
    late_ub, left_ub = milp.qos_bounds()
    counter = {"n": 0}

    class Plan(ElementwiseProblem):
        def __init__(self) -> None:
            super().__init__(n_var=G * H, n_obj=2, n_ieq_constr=2 * len(inst.classes), xl=0,
                             xu=np.repeat(inst.count, H).astype(float), vtype=int)

        def _evaluate(self, x, out, *args, **kwargs):
            counter["n"] += 1
            cost, jh, late, left = dispatch(inst, np.rint(x).reshape(G, H))
            out["F"] = [cost, jh]
            out["G"] = np.concatenate([late - late_ub, left - left_ub])

    class CpuTime(Termination):
        def __init__(self) -> None:
            super().__init__()
            self.start = time.process_time()

        def _update(self, algorithm):
            if algorithm.n_gen is not None and algorithm.n_gen >= max_gen:
                return 1.0
            return min(1.0, (time.process_time() - self.start) / max(cpu_budget_s, 1e-3))

    rng = np.random.default_rng(seed)
    initial = rng.integers(0, np.repeat(inst.count, H) + 1, size=(pop_size, G * H)).astype(float)
    initial[0] = np.repeat(inst.count, H)  # all on: a feasible start the user would try first
    algo = NSGA2(pop_size=pop_size, sampling=initial,
                 crossover=SBX(prob=0.9, eta=15, vtype=float, repair=RoundingRepair()),
                 mutation=PM(eta=20, vtype=float, repair=RoundingRepair()), eliminate_duplicates=True)
    t0, c0 = time.perf_counter(), time.process_time()
    res = minimize(Plan(), algo, CpuTime(), seed=seed, verbose=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if res.F is None:
        return Front("nsga2", np.zeros((0, 2)), wall, cpu, counter["n"])
    F = np.atleast_2d(res.F)
    feasible = np.atleast_2d(res.CV).reshape(-1) <= 1e-6 if res.CV is not None else np.ones(len(F), bool)
    return Front("nsga2", nondominated(F[feasible]), wall, cpu, counter["n"])


def compare(inst: PlanInstance, points: int = 12, pop_size: int = 60, seed: int = 1,
            time_limit_s: float = 60.0) -> dict:
    """Both fronts on ``inst``: ``{instance, pareto: [{method, hypervolume, points, wall_s, ...}], ...}``."""
    milp = PlanMilp(inst)
    mf, plans = milp_front(milp, points, time_limit_s)
    nf = nsga2_front(milp, cpu_budget_s=mf.cpu_s, pop_size=pop_size, seed=seed)
    both = np.vstack([mf.points, nf.points]) if len(nf.points) else mf.points
    ideal, nadir = both.min(axis=0), both.max(axis=0)
    return {"instance": inst.summary(), "qos_unattainable": milp.attainable,
            "pareto": [f.as_dict(hypervolume(f.points, ideal, nadir)) for f in (mf, nf)],
            "normalisation": {"ideal": ideal.round(6).tolist(), "nadir": nadir.round(6).tolist(), "ref": 1.1}}
