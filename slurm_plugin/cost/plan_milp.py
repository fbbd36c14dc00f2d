"""The capacity plan as a MILP in HiGHS (highspy, one ``passModel``): cost and job-hours of a plan, exactly.

Columns, hour by hour: ``x[g,t]`` nodes on (integer), ``y[c,g,t]`` node-hours of class ``c`` on group ``g``
(only where ``speed > 0``), ``B[c,t]`` work waiting at the end of hour ``t``, ``L[c,t]`` waiting work older
than the class's max_wait. Rows: capacity ``sum_c y <= x``; balance ``B[t] = B[t-1] + demand[t] - sum_g speed*y``;
lateness ``B[t] - L[t] <= arrivals of the last max_wait hours``; the tier target ``sum_t L <= late_share *
sum demand``; ``B[H-1] = 0`` (all work served in the horizon). Two objectives (:mod:`.plan_model`):
``cost`` and ``job_hours = sum B + sum y``; :func:`solve` minimises one with the other bounded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import highspy
import numpy as np

from .plan_model import PlanInstance


@dataclass(frozen=True)
class PlanSolution:
    """One plan: nodes on per group and hour, the work placed, and its two objectives."""

    on: np.ndarray  # (G, H)
    work: np.ndarray  # (C, G, H) node-hours
    cost: float  # variable cost (plan-dependent), the site's currency
    job_hours: float
    status: str = "optimal"
    gap: float = 0.0
    wall_s: float = 0.0


class PlanMilp:
    """The matrix of one instance, built once; each :meth:`solve` changes only objective and two row bounds."""

    def __init__(self, inst: PlanInstance, integral_work: bool = False) -> None:
        self.inst = inst
        C, G, H = len(inst.classes), len(inst.groups), inst.hours
        self.pairs = [(c, g) for c in range(C) for g in range(G) if inst.speed[c, g] > 0]
        if any(not any(c == cc for cc, _ in self.pairs) for c in range(C) if inst.demand[c].sum() > 0):
            bad = [inst.classes[c] for c in range(C) if inst.demand[c].sum() > 0
                   and not any(c == cc for cc, _ in self.pairs)]
            raise ValueError(f"classes {bad} have work but no node group they can run on")
        K = len(self.pairs)
        self.nx, self.ny, self.nb = G * H, K * H, C * H
        ox, oy, ob, ol = 0, self.nx, self.nx + self.ny, self.nx + self.ny + self.nb
        oe = ol + self.nb  # E[c]: work left at the horizon's end (bounded by what all-on capacity leaves)
        self.off = (ox, oy, ob, ol)
        n = oe + C
        X = lambda g, t: ox + g * H + t  # noqa: E731
        Y = lambda k, t: oy + k * H + t  # noqa: E731
        B = lambda c, t: ob + c * H + t  # noqa: E731
        L = lambda c, t: ol + c * H + t  # noqa: E731
        lower, upper = np.zeros(n), np.full(n, highspy.kHighsInf)
        upper[ox:oy] = np.repeat(inst.count.astype(float), H)
        self.cost = np.zeros(n)
        self.cost[ox:oy] = inst.on_cost.reshape(-1)
        for k, (c, g) in enumerate(self.pairs):
            self.cost[Y(k, 0):Y(k, 0) + H] = inst.busy_cost[g]
        for c in range(C):
            self.cost[L(c, 0):L(c, 0) + H] = inst.penalty[c]
        self.job_hours = np.zeros(n)
        self.job_hours[oy:ol] = 1.0
        rows: list[tuple[list[int], list[float], float, float]] = []
        self.target_rows: list[int] = []
        inf = highspy.kHighsInf
        for g in range(G):
            ks = [k for k, (_, gg) in enumerate(self.pairs) if gg == g]
            for t in range(H):
                rows.append(([Y(k, t) for k in ks] + [X(g, t)], [1.0] * len(ks) + [-1.0], -inf, 0.0))
        for c in range(C):
            ks = [k for k, (cc, _) in enumerate(self.pairs) if cc == c]
            a = inst.demand[c]
            w = int(inst.max_wait_h[c])
            cum = np.concatenate([[0.0], np.cumsum(a)])
            for t in range(H):
                cols = [B(c, t)] + ([B(c, t - 1)] if t else []) + [Y(k, t) for k in ks]
                vals = [1.0] + ([-1.0] if t else []) + [float(inst.speed[c, self.pairs[k][1]]) for k in ks]
                rows.append((cols, vals, float(a[t]), float(a[t])))
                window = cum[t + 1] - cum[max(0, t + 1 - w)] if w > 0 else 0.0
                rows.append(([B(c, t), L(c, t)], [1.0, -1.0], -inf, float(window)))
            rows.append(([B(c, H - 1), oe + c], [1.0, -1.0], -inf, 0.0))
            self.target_rows.append(len(rows))
            rows.append(([L(c, t) for t in range(H)], [1.0] * H, -inf,
                         float(inst.late_share[c] * a.sum()) if w < H else inf))
        # the two bound rows, kept last: job hours <= eps, cost <= cap
        everything = list(range(n))
        rows.append((everything, list(self.job_hours), -inf, inf))
        rows.append((everything, list(self.cost), -inf, inf))
        self.n_rows = len(rows)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = n, len(rows)
        lp.col_cost_ = self.cost.copy()
        lp.col_lower_, lp.col_upper_ = lower, upper
        lp.row_lower_ = np.array([r[2] for r in rows])
        lp.row_upper_ = np.array([r[3] for r in rows])
        starts = np.cumsum([0] + [len(r[0]) for r in rows])
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = starts.astype(np.int32)
        lp.a_matrix_.index_ = np.concatenate([np.asarray(r[0], dtype=np.int32) for r in rows])
        lp.a_matrix_.value_ = np.concatenate([np.asarray(r[1], dtype=float) for r in rows])
        kinds = np.full(n, highspy.HighsVarType.kContinuous)
        kinds[ox:oy] = highspy.HighsVarType.kInteger
        if integral_work:
            kinds[oy:ob] = highspy.HighsVarType.kInteger
        lp.integrality_ = list(kinds)
        from ..pack.highs_direct import _quiet_highs  # the banner goes to stdout otherwise

        self.h = _quiet_highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)
        self.h.passModel(lp)
        self.oe, self.upper = oe, upper
        self.attainable = self._qos_attainable()

    def qos_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(C,) the bounds every plan keeps: late node-hours (sum over hours) and work left at the end."""
        lp = self.h.getLp()
        late = np.array([lp.row_upper_[r] for r in self.target_rows])
        left = np.array([lp.col_upper_[self.oe + c] for c in range(len(self.inst.classes))])
        return late, left

    def _qos_attainable(self) -> dict[str, dict[str, float]]:
        """Where a tier target or serving everything in the horizon is impossible even with every node on,
        bound lateness and the work left at the end by the least that every-node-on attains together (an LP:
        with all nodes on, capacity is largest). Returns those classes: {class: {late, left}} (node-hours)."""
        inst, h, C, H = self.inst, self.h, len(self.inst.classes), self.inst.hours
        ox, oy, _, ol = self.off
        n = len(self.cost)
        idx = np.arange(n, dtype=np.int32)
        lower = np.zeros(n)
        lower[ox:oy] = self.upper[ox:oy]
        h.changeColsBounds(n, idx, lower, self.upper)
        total = np.maximum(inst.demand.sum(axis=1), 1e-9)
        obj = np.zeros(n)
        for c in range(C):
            obj[ol + c * H: ol + (c + 1) * H] = 1.0 / total[c]
            obj[self.oe + c] = 1000.0 / total[c]
        h.changeColsCost(n, idx, obj)
        kinds = h.getLp().integrality_
        for row in self.target_rows:
            h.changeRowBounds(row, -highspy.kHighsInf, highspy.kHighsInf)
        h.changeColsIntegrality(n, idx, np.full(n, highspy.HighsVarType.kContinuous))
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(f"capacity plan: the all-on plan is {h.modelStatusToString(h.getModelStatus())}")
        v = np.asarray(h.getSolution().col_value)
        h.changeColsIntegrality(n, idx, np.asarray(kinds))
        lower[ox:oy] = 0.0
        h.changeColsBounds(n, idx, lower, self.upper)
        out, inf = {}, highspy.kHighsInf
        for c in range(C):
            late, left = float(v[ol + c * H: ol + (c + 1) * H].sum()), float(v[self.oe + c])
            row = self.target_rows[c]
            target = float(inst.late_share[c] * inst.demand[c].sum()) if inst.max_wait_h[c] < H else inf
            if late > target + 1e-9 or left > 1e-9:
                out[inst.classes[c]] = {"late": round(late, 6), "left": round(left, 6)}
            h.changeRowBounds(row, -inf, max(target, late * (1 + 1e-6) + 1e-7) if target < inf else inf)
            slack = left * (1 + 1e-6) + 1e-7 if left > 1e-9 else 0.0
            h.changeColBounds(self.oe + c, 0.0, slack)
        return out

    def solve(self, objective: str, max_job_hours: float | None = None, max_cost: float | None = None,
              time_limit_s: float = 60.0, rel_gap: float = 1e-6) -> PlanSolution | None:
        """Minimise ``objective`` ("cost" or "job_hours") with the other bounded; None if infeasible."""
        h, inf = self.h, highspy.kHighsInf
        vec = self.cost if objective == "cost" else self.job_hours
        h.changeColsCost(len(vec), np.arange(len(vec), dtype=np.int32), vec)
        h.changeRowBounds(self.n_rows - 2, -inf, inf if max_job_hours is None else max_job_hours)
        h.changeRowBounds(self.n_rows - 1, -inf, inf if max_cost is None else max_cost)
        h.setOptionValue("time_limit", float(time_limit_s))
        h.setOptionValue("mip_rel_gap", float(rel_gap))
        t0 = time.perf_counter()
        h.run()
        wall = time.perf_counter() - t0
        status = h.getModelStatus()
        if status == highspy.HighsModelStatus.kInfeasible:
            return None
        sol = h.getSolution()
        if not sol.value_valid:
            return None
        v = np.asarray(sol.col_value)
        info = h.getInfo()
        name = "optimal" if status == highspy.HighsModelStatus.kOptimal else h.modelStatusToString(status)
        return self._solution(v, name, float(info.mip_gap) if np.isfinite(info.mip_gap) else 0.0, wall)

    def _solution(self, v: np.ndarray, status: str, gap: float, wall: float) -> PlanSolution:
        inst = self.inst
        C, G, H = len(inst.classes), len(inst.groups), inst.hours
        ox, oy, _, _ = self.off
        on = np.rint(v[ox:oy]).reshape(G, H)
        work = np.zeros((C, G, H))
        for k, (c, g) in enumerate(self.pairs):
            work[c, g] = v[oy + k * H: oy + (k + 1) * H]
        return PlanSolution(on=on, work=work, cost=float(self.cost @ v), job_hours=float(self.job_hours @ v),
                            status=status, gap=gap, wall_s=wall)
