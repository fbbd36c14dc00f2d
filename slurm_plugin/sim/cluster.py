"""Per-node resource state of the simulated cluster as numpy arrays, plus the EASY reservation planner.

Nodes of a group are contiguous (``start[g]:end[g]``). A job asks, on each of ``nodes`` nodes, for ``cores``,
``mem`` GB and ``gcount`` units of one GRES column; :class:`Req` lists the (group, GRES column) options it may
use. Power states (see :mod:`.power`): ON, OFF, BOOTING, SHUTTING; an allocation on an OFF node boots it.
"""

from __future__ import annotations

from collections.abc import Callable

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .machine import Machine
from .power import BOOTING, OFF, ON, SHUTTING
from .weight_order import WeightOrder

INF = float("inf")
_NO_SLOTS = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Req:
    """One job's per-node request and where it may run: ``options`` = ((group, gres column or -1), ...)."""

    nodes: int
    cores: int
    mem: float
    gcount: int
    options: tuple[tuple[int, int], ...]
    whole: bool  # every option group is filled by one share (exclusive nodes): fast paths apply

    def __hash__(self) -> int:  # the dataclass's own hash (of the fields in order), computed once
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash((self.nodes, self.cores, self.mem, self.gcount, self.options, self.whole))

    @cached_property
    def groups(self) -> tuple[int, ...]:
        """The option groups, in option order."""
        return tuple(g for g, _ in self.options)

    @cached_property
    def gres_cols(self) -> bool:
        """Whether a share needs GRES units of a column on some option group (checked per node)."""
        return bool(self.gcount) and any(col >= 0 for _, col in self.options)


@dataclass(frozen=True)
class Reservation:
    """The head job's plan: it can start at ``time`` on the nodes in ``mask``."""

    job: int
    time: float
    mask: np.ndarray

    @cached_property
    def nodes(self) -> np.ndarray:
        """The nodes in ``mask``, ascending."""
        return np.flatnonzero(self.mask)


class ClusterState:
    def __init__(self, machine: Machine):
        self.machine = machine
        gs = machine.groups
        counts = np.array([g.count for g in gs])
        self.end = np.cumsum(counts)
        self.start = self.end - counts
        rep = lambda values, dt=np.float64: np.repeat(np.asarray(values, dtype=dt), counts)  # noqa: E731
        self.group = rep(range(len(gs)), np.int64)
        self.cap_c = rep([g.cores for g in gs], np.int64)
        self.cap_m = rep([g.memory_gb for g in gs])
        self.keys = machine.gres_keys
        self.cap_g = np.zeros((machine.nodes, max(len(self.keys), 1)), dtype=np.int64)
        for gi, g in enumerate(gs):
            for key, cnt in g.gres.items():
                self.cap_g[self.start[gi]:self.end[gi], self.keys.index(key)] = cnt
        self.free_c, self.free_m, self.free_g = self.cap_c.copy(), self.cap_m.copy(), self.cap_g.copy()
        self.njobs = np.zeros(machine.nodes, dtype=np.int64)
        self.est_free = np.full(machine.nodes, -INF)  # latest planned end of the jobs on a node
        self._stale = np.zeros(machine.nodes, dtype=bool)  # est_free to recompute (a shared job ended)
        self.state = np.full(machine.nodes, ON, dtype=np.int8)
        self.ready_at = np.zeros(machine.nodes)  # BOOTING: on at; SHUTTING: off at
        self.boot_s = rep([g.boot_s for g in gs])
        self.shutdown_s = rep([g.shutdown_s for g in gs])
        self.idle_nodes = counts.copy()  # per group: nodes with no job and not SHUTTING
        self.free_cores_group = counts * np.array([g.cores for g in gs])
        self.total_free_cores = int(self.free_cores_group.sum())
        self._req_cache: dict[tuple, Req] = {}
        self._idx_cache: dict[tuple, np.ndarray] = {}
        self.all_on = False  # set by the engine when no node ever changes power state (fast paths)
        # when a boot ending at r lets the node take its jobs (None: at r); fidelity replays set Slurm's clock
        self.ready_clock: Callable[[np.ndarray], np.ndarray] | None = None
        # allocation records (one per job and node) for planning partial-node requests
        self._rec = np.zeros((1024, 6))  # node, est_end, cores, mem, gres col, gres count
        self._rec_alive = np.zeros(1024, dtype=bool)
        # free record rows, a stack (last = next taken): a list, so a release appends instead of copying it
        self._free_slots: list[int] = list(range(1023, -1, -1))
        # per group, a counter bumped whenever one of its nodes changes (load, planned ends, power state): a plan
        # over groups whose counters are unchanged is the same plan (see :meth:`plan`)
        self.version = np.zeros(len(gs), dtype=np.int64)
        # per group, a counter bumped only when capacity may have grown (a release, a node done shutting down):
        # a request that fit nowhere in its groups fits nowhere while their counters stay (see Engine._fit_now)
        self.grown = np.zeros(len(gs), dtype=np.int64)
        self.grown_n = 0  # bumped with any of ``grown``: sums over ``grown`` may be cached while it stays
        self._plans: dict = {}
        # the free room in node Weight order, kept by :meth:`touch` and the one-node allocate/release
        self.by_weight = WeightOrder(self, [g.cost_per_hour for g in gs])

    # --- requests -----------------------------------------------------------------------------------------
    def req(self, jobs, i: int) -> Req:
        """The :class:`Req` of row ``i`` of a JobTable (cached by shape)."""
        key = (int(jobs.arch_mask[i]), int(jobs.gres_name[i]), int(jobs.gres_type[i]), int(jobs.gres_count[i]),
               int(jobs.nodes[i]), int(jobs.cores[i]), float(jobs.mem_gb[i]))
        r = self._req_cache.get(key)
        if r is None:
            r = self._req_cache[key] = self._resolve(jobs, i)
        return r

    def _resolve(self, jobs, i: int) -> Req:
        from ..workload.fit import fitting_groups
        opts = []
        # only groups whose one node holds one share: a whole-node request skips the per-node core check later
        for gi in fitting_groups(jobs, i, self.machine):
            col = -1
            if jobs.gres_name[i] >= 0:
                name = jobs.gres_names[jobs.gres_name[i]]
                types = jobs.gres_type_options(i)
                col = next(self.keys.index(k) for k in self.machine.groups[gi].gres
                           if k[0] == name and (types is None or k[1] in types))
            opts.append((gi, col))
        # Slurm allocates lower node Weight first, and the rendered Weight ranks groups by cost per hour
        opts.sort(key=lambda o: (self.machine.groups[o[0]].cost_per_hour, o[0]))
        whole = all(jobs.cores[i] >= self.machine.groups[g].cores for g, _ in opts)
        return Req(int(jobs.nodes[i]), int(jobs.cores[i]), float(jobs.mem_gb[i]), int(jobs.gres_count[i]),
                   tuple(opts), whole)

    # --- fitting now --------------------------------------------------------------------------------------
    def candidates(self, r: Req, exclude: np.ndarray | None = None) -> np.ndarray | None:
        """Indices of the nodes that can take one share of ``r`` now, or None if fewer than ``r.nodes``."""
        if not self._may_fit(r):
            return None
        span = self._span(r)
        if span is not None:
            idx = self.by_weight.nodes[span[0]:span[1]][self.by_weight.fitting(span, r.cores, r.mem, exclude)]
            return idx if len(idx) >= r.nodes else None
        if len(r.options) > 1 and not r.gres_cols:
            # one pass over every node, then the option groups' nodes in option order (same indices and order
            # as the per-group loop below, with a constant number of numpy calls instead of ~6 per group)
            if r.whole:
                ok = (self.njobs == 0) & (self.state != SHUTTING)
            else:
                ok = (self.free_c >= r.cores) & (self.state != SHUTTING)
                if r.mem > 0:
                    ok &= self.free_m >= r.mem
            if exclude is not None:
                ok &= ~exclude
            idx = self._nodes_of(r.groups)
            idx = idx[ok[idx]]
            return idx if len(idx) >= r.nodes else None
        parts = []
        for g, col in r.options:
            s, e = self.start[g], self.end[g]
            if r.whole:
                ok = (self.njobs[s:e] == 0) & (self.state[s:e] != SHUTTING)
            else:
                ok = (self.free_c[s:e] >= r.cores) & (self.state[s:e] != SHUTTING)
                if r.mem > 0:
                    ok &= self.free_m[s:e] >= r.mem
            if col >= 0 and r.gcount > 0:
                ok &= self.free_g[s:e, col] >= r.gcount
            if exclude is not None:
                ok &= ~exclude[s:e]
            parts.append(np.flatnonzero(ok) + s)
        idx = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return idx if len(idx) >= r.nodes else None

    def first_fit(self, r: Req, exclude: np.ndarray | None = None) -> np.ndarray | None:
        """For a one-node request: FirstFit's choice among :meth:`candidates` (the first node that is on, else
        the first), as a one-node array; None if there is no candidate."""
        if not self._may_fit(r):
            return None
        span = self._span(r)
        if span is not None:
            return self.by_weight.first(span, self.by_weight.fitting(span, r.cores, r.mem, exclude))
        cand = self.candidates(r, exclude)
        if cand is None or self.state[cand[0]] == ON:
            return None if cand is None else cand[:1]
        k = int(np.argmax(self.state[cand] == ON))
        return cand[k:k + 1]

    def _may_fit(self, r: Req) -> bool:
        """A cheap necessary condition for :meth:`candidates`: enough idle nodes or free cores in its groups."""
        if r.whole:
            return sum(self.idle_nodes[g] for g in r.groups) >= r.nodes
        return sum(self.free_cores_group[g] for g in r.groups) >= r.nodes * r.cores

    def _span(self, r: Req) -> tuple | None:
        """:meth:`WeightOrder.span` of ``r``'s groups when its candidates can be read there (a partial-node
        request without a per-node GRES count, its groups in Weight order); else None."""
        if r.whole or r.gres_cols:
            return None
        return self.by_weight.span(r.groups)

    def idle_outside(self, r: Req, mask: np.ndarray) -> int:
        """Nodes of ``r``'s groups with no job, not shutting down and not in ``mask``."""
        return int(sum(((self.njobs[self.start[g]:self.end[g]] == 0) & (self.state[self.start[g]:self.end[g]] != SHUTTING)
                        & ~mask[self.start[g]:self.end[g]]).sum() for g, _ in r.options))

    def ready_time(self, nodes: np.ndarray, now: float) -> np.ndarray:
        """When each node could run a job: now if on, after a boot if off/booting/shutting down; never before
        ``now`` (a plan made from a later ``now`` than the clock's, as backfill's ``TRY_LATER``, must not start
        on a booting node before that ``now``)."""
        if self.all_on:
            return np.full(len(nodes), now)
        st = self.state[nodes]
        t = np.full(len(nodes), now)
        if not st.any():  # every node ON (state code 0)
            return t
        t = np.where(st == OFF, self.boot_end(now + self.boot_s[nodes]), t)
        t = np.where(st == BOOTING, self.ready_at[nodes], t)
        t = np.where(st == SHUTTING, self.boot_end(self.ready_at[nodes] + self.boot_s[nodes]), t)
        return np.maximum(t, now)

    def boot_end(self, ends: np.ndarray) -> np.ndarray:
        """When nodes whose boots end at ``ends`` take their jobs (``ready_clock``; at once without one)."""
        return ends if self.ready_clock is None else self.ready_clock(ends)

    # --- allocation -----------------------------------------------------------------------------------------
    def allocate(self, r: Req, nodes: np.ndarray, est_end: float) -> np.ndarray:
        """Take one share of ``r`` on each of ``nodes``; returns its planning records (for :meth:`release`)."""
        if len(nodes) == 1:
            return self._allocate_one(r, int(nodes[0]), est_end)
        self.free_c[nodes] -= r.cores
        if r.mem:
            self.free_m[nodes] -= r.mem
        if r.gcount:
            col = self._col(r, nodes)
            self.free_g[nodes, col] -= r.gcount
        newly = nodes[self.njobs[nodes] == 0]
        self.njobs[nodes] += 1
        if len(r.options) == 1:
            g = r.options[0][0]
            self.idle_nodes[g] -= len(newly)
            self.free_cores_group[g] -= r.cores * len(nodes)
        else:
            ng = len(self.idle_nodes)
            self.idle_nodes -= np.bincount(self.group[newly], minlength=ng)
            self.free_cores_group -= np.bincount(self.group[nodes], minlength=ng) * r.cores
        self.total_free_cores -= r.cores * len(nodes)
        self.touch(nodes, r)
        self.est_free[nodes] = np.maximum(self.est_free[nodes], est_end)
        if r.whole:
            return _NO_SLOTS
        slots = self._take_slots(len(nodes))
        block = np.empty((len(nodes), 6))
        block[:] = (0.0, est_end, r.cores, r.mem, -1.0, r.gcount)
        block[:, 0] = nodes
        if r.gcount:
            block[:, 4] = col
        self._rec[slots] = block
        self._rec_alive[slots] = True
        return slots

    def _allocate_one(self, r: Req, i: int, est_end: float) -> np.ndarray:
        """:meth:`allocate` on the one node ``i`` (most jobs), on scalars: the same numbers."""
        g = int(self.group[i])
        self.free_c[i] -= r.cores
        if r.mem:
            self.free_m[i] -= r.mem
        col = self._col_one(r, g)
        if r.gcount:
            self.free_g[i, col] -= r.gcount
        if self.njobs[i] == 0:
            self.idle_nodes[g] -= 1
        self.njobs[i] += 1
        self.free_cores_group[g] -= r.cores
        self.total_free_cores -= r.cores
        self.version[g] += 1
        self.by_weight.update_one(self, i)
        if est_end > self.est_free[i]:
            self.est_free[i] = est_end
        if r.whole:
            return _NO_SLOTS
        slots = self._take_slots(1)
        self._rec[slots[0]] = (i, est_end, r.cores, r.mem, col, r.gcount)
        self._rec_alive[slots[0]] = True
        return slots

    def _col_one(self, r: Req, g: int) -> int:
        """The GRES column ``r`` uses on a node of group ``g`` (-1: none), as :meth:`_col` gives it."""
        if not r.gcount:
            return -1
        col = -1
        for og, c in r.options:
            if og == g:
                col = c
        return col

    def _take_slots(self, k: int) -> np.ndarray:
        if len(self._free_slots) < k:
            old = len(self._rec)
            grow = max(old, k)
            self._rec = np.vstack([self._rec, np.zeros((grow, 6))])
            self._rec_alive = np.concatenate([self._rec_alive, np.zeros(grow, dtype=bool)])
            self._free_slots[:0] = range(old + grow - 1, old - 1, -1)
        if k == 1:
            return np.array([self._free_slots.pop()])
        slots = np.array(self._free_slots[-k:])
        del self._free_slots[-k:]
        return slots

    def _col(self, r: Req, nodes: np.ndarray) -> np.ndarray:
        if not r.gcount:
            return np.full(len(nodes), -1)
        cols = np.full(len(self.machine.groups), -1)
        for g, c in r.options:
            cols[g] = c
        return cols[self.group[nodes]]

    def release(self, r: Req, nodes: np.ndarray, slots: np.ndarray) -> None:
        if len(nodes) == 1:
            return self._release_one(r, int(nodes[0]), slots)
        self.free_c[nodes] += r.cores
        if r.mem:
            self.free_m[nodes] += r.mem
        if r.gcount:
            self.free_g[nodes, self._col(r, nodes)] += r.gcount
        self.njobs[nodes] -= 1
        emptied = nodes[self.njobs[nodes] == 0]
        if len(r.options) == 1:
            g = r.options[0][0]
            self.idle_nodes[g] += len(emptied)
            self.free_cores_group[g] += r.cores * len(nodes)
        else:
            ng = len(self.idle_nodes)
            self.idle_nodes += np.bincount(self.group[emptied], minlength=ng)
            self.free_cores_group += np.bincount(self.group[nodes], minlength=ng) * r.cores
        self.total_free_cores += r.cores * len(nodes)
        self.touch(nodes, r, grew=True)
        self.est_free[emptied] = -INF
        if len(slots):
            self._rec_alive[slots] = False
            self._free_slots += slots.tolist()
        if not r.whole:
            self._stale[nodes[self.njobs[nodes] > 0]] = True  # est_free may be too late: recompute on use

    def _release_one(self, r: Req, i: int, slots: np.ndarray) -> None:
        """:meth:`release` from the one node ``i``, on scalars."""
        g = int(self.group[i])
        self.free_c[i] += r.cores
        if r.mem:
            self.free_m[i] += r.mem
        if r.gcount:
            self.free_g[i, self._col_one(r, g)] += r.gcount
        self.njobs[i] -= 1
        self.free_cores_group[g] += r.cores
        self.total_free_cores += r.cores
        self.version[g] += 1
        self.by_weight.update_one(self, i)
        self.grown[g] += 1
        self.grown_n += 1
        if self.njobs[i] == 0:
            self.idle_nodes[g] += 1
            self.est_free[i] = -INF
        elif not r.whole:
            self._stale[i] = True
        if len(slots):
            self._rec_alive[slots] = False
            self._free_slots += slots.tolist()

    def ready_one(self, i: int, now: float) -> float:
        """:meth:`ready_time` of the one node ``i``."""
        st = self.state[i]
        if self.all_on or st == ON:
            return float(now)
        if self.ready_clock is not None:
            return float(self.ready_time(np.array([i]), now)[0])
        if st == OFF:
            return float(now + self.boot_s[i])
        if st == BOOTING:
            return float(max(self.ready_at[i], now))
        return float(max(self.ready_at[i] + self.boot_s[i], now))

    def touch(self, nodes: np.ndarray, r: Req | None = None, grew: bool = False) -> None:
        """Record that ``nodes`` changed (``r``: the request that took or left them, whose single option group
        then holds them all), and with ``grew`` that they may now hold more than before. Every change of a
        node's load, planned end or power state goes through here (or the one-node allocate/release)."""
        self.by_weight.update(self, nodes)
        if r is not None and len(r.options) == 1:
            self.version[r.options[0][0]] += 1
            if grew:
                self.grown[r.options[0][0]] += 1
                self.grown_n += 1
        else:
            g = self.group[nodes]
            self.version[g] += 1
            if grew:
                self.grown[g] += 1
                self.grown_n += 1

    def _refresh_est_free(self, idx: np.ndarray) -> None:
        """Recompute est_free of the stale nodes among ``idx`` from the planning records."""
        nodes = idx[self._stale[idx]]
        if not len(nodes):
            return
        self._stale[nodes] = False
        alive = self._rec[self._rec_alive]
        pick = np.zeros(len(self.state), dtype=bool)
        pick[nodes] = True
        on = alive[pick[alive[:, 0].astype(np.int64)]]  # the records on ``nodes``, in record order (as np.isin)
        self.est_free[nodes] = -INF
        np.maximum.at(self.est_free, on[:, 0].astype(np.int64), on[:, 1])

    # --- planning -----------------------------------------------------------------------------------------
    def plan(self, job: int, r: Req, now: float, exclude: np.ndarray | None = None,
             choose=None) -> Reservation | None:
        """Earliest time ``r`` fits if running jobs end at their time limits, and the nodes it would take
        (preferring nodes that are busy now, so that what is free now stays usable for backfill). Nodes in
        ``exclude`` (other reservations) are not used; None if the rest can never hold ``r``.

        ``choose(nodes, k)``: which ``k`` of ``nodes`` (those that fit by the planned time) the plan takes,
        instead of the busiest; a plan made with it is neither remembered nor reused.

        Without ``exclude``, the plan is remembered per request and reused while no node of its groups changed
        (:meth:`touch`) and none of them is off: it then depends on nothing else. Nodes that fit now are
        planned at ``now`` and no other node's time depends on ``now`` (a busy node's planned end lies after it,
        a booting or shutting one's times are fixed); only an off node's boot would end at ``now + boot_s``."""
        idx = self._nodes_of(r.groups)
        memo = None
        if exclude is None and choose is None:
            ver = tuple(self.version[g] for g, _ in r.options) if len(r.options) > 1 else self.version[r.options[0][0]]
            hit = self._plans.get(r)
            if hit is not None and hit[0] == ver:
                return hit[1] if hit[1].job == job else Reservation(job, hit[1].time, hit[1].mask)
            if self.all_on or not (self.state[idx] == OFF).any():
                memo = ver
        self._refresh_est_free(idx)
        if r.whole and self.all_on:
            sl = idx if len(r.options) > 1 else slice(self.start[r.options[0][0]], self.end[r.options[0][0]])
            avail = np.maximum(self.est_free[sl], now)
        elif r.whole:
            ready = self.ready_time(idx, now)
            avail = np.where(self.njobs[idx] == 0, ready, np.maximum(self.est_free[idx], ready))
        else:
            avail = np.maximum(self._partial_avail(r, idx, now), self.ready_time(idx, now))
        if exclude is not None:
            avail = np.where(exclude[idx], INF, avail)
        k = r.nodes
        t = float(np.partition(avail, k - 1)[k - 1])
        if t == INF and exclude is not None:
            return None
        if t == INF:
            raise RuntimeError(f"job {job} can never fit (reader fit check missed it)")
        within = np.flatnonzero(avail <= t)
        mask = np.zeros(len(self.state), dtype=bool)
        if choose is None:
            mask[idx[within[np.argsort(-avail[within], kind="stable")[:k]]]] = True
        else:
            mask[choose(idx[within], k)] = True
        mask.flags.writeable = False  # a plan's nodes never change (fit checks keep views of it by identity)
        plan = Reservation(job, t, mask)
        if memo is not None:
            self._plans[r] = (memo, plan)
        elif exclude is None and choose is None:
            self._plans.pop(r, None)
        return plan

    def _nodes_of(self, key: tuple[int, ...]) -> np.ndarray:
        """The nodes of groups ``key``, group by group in that order."""
        idx = self._idx_cache.get(key)
        if idx is None:
            idx = self._idx_cache[key] = np.concatenate([np.arange(self.start[g], self.end[g]) for g in key])
        return idx

    def _partial_avail(self, r: Req, idx: np.ndarray, now: float) -> np.ndarray:
        """Per node of ``idx``: when (by planned ends) one share of ``r`` fits there; inf if never."""
        col = self._col(r, idx) if r.gcount else np.full(len(idx), -1)
        dc = r.cores - self.free_c[idx]
        dm = (r.mem - self.free_m[idx]) if r.mem else np.zeros(len(idx))
        dg = (r.gcount - self.free_g[idx, np.maximum(col, 0)]) if r.gcount else np.zeros(len(idx))
        cap_ok = (self.cap_c[idx] >= r.cores) & ((self.cap_m[idx] >= r.mem) | (r.mem == 0))
        avail = np.where((dc <= 0) & (dm <= 0) & (dg <= 0), now, INF)
        avail[~cap_ok] = INF
        need = np.zeros(len(self.state), dtype=bool)
        need[idx[(avail == INF) & cap_ok]] = True
        if not need.any():
            return avail
        pos = np.full(len(self.state), -1)
        pos[idx] = np.arange(len(idx))
        whole_held = (avail == INF) & cap_ok & (self.njobs[idx] > 0)
        avail[whole_held] = self.est_free[idx[whole_held]]  # held by a whole-node job: free at its end
        alive = np.flatnonzero(self._rec_alive)
        rec = self._rec[alive[need[self._rec[alive, 0].astype(np.int64)]]]
        if not len(rec):
            return avail
        rec = rec[np.lexsort((rec[:, 1], rec[:, 0]))]
        node = rec[:, 0].astype(np.int64)
        p = pos[node]
        starts = np.r_[0, np.flatnonzero(np.diff(node)) + 1]
        seg = np.repeat(starts, np.diff(np.r_[starts, len(node)]))

        def segcum(v):
            c = np.cumsum(v)
            return c - (c[seg] - v[seg])

        ok = segcum(rec[:, 2]) >= dc[p]
        if r.mem:
            ok &= segcum(rec[:, 3]) >= dm[p]
        if r.gcount:
            ok &= segcum(np.where(rec[:, 4] == col[p], rec[:, 5], 0.0)) >= dg[p]
        hit = np.flatnonzero(ok)
        hn = node[hit]  # sorted: the first hit of each node opens its run
        first = np.flatnonzero(np.r_[True, hn[1:] != hn[:-1]]) if len(hit) else hit
        avail[p] = INF  # nodes with partial jobs: from their records only
        np.minimum.at(avail, p[hit[first]], rec[hit[first], 1])
        return avail
