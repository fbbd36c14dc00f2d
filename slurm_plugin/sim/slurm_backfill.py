"""Slurm 22.05's backfill plan (sched/backfill), for fidelity replays: whole-node reservations in time windows
of ``bf_resolution`` seconds.

The engine's own several-reservation backfill (``Engine._backfill_multi``) gives each blocked job its nodes for
good: a later job can never be planned on a node an earlier plan holds, and is then not protected at all.
Slurm's backfill (src/plugins/sched/backfill/backfill.c, ``_attempt_backfill``; seen in the replays' logs with
DebugFlags=Backfill as ``JobId=.. to start at S, end at E on nodes N``) plans every job it tests, in priority
order, into a map of time windows:

- a job that cannot start now is planned at its earliest start S on nodes N, and N is reserved, whole nodes
  whatever the job uses of them, from ``floor(S)`` to ``floor(S + limit)``, both rounded down to
  ``bf_resolution`` (60 s by default) on the wall clock;
- a lower job may start now only on nodes no window touches from now to now + its limit (a window counts
  when it begins at or before that end and has not ended);
- a job whose earliest plan runs into a window is tried again from that window's end (``TRY_LATER``).

So a short job is kept off a node up to a resolution step before the planned start of a job there, and a
node's windows stack one after another instead of the first plan taking it. :class:`SlurmBackfillEngine` is the
engine with this backfill in place of ``_backfill_multi``; the main pass (priority order, stop at the first
job that does not fit) is the engine's own.

With ``slurm_select`` it also places and plans around power saving as slurmctld does:

- nodes are chosen by :func:`~slurm_plugin.sim.slurm_select.select_nodes` (powered nodes by Weight, then the
  powered-down ones, best fit), not the engine's FirstFit;
- a node powering down is in no plan: slurmctld takes it out of the available nodes until it is off
  (SuspendTimeout), so backfill neither starts nor plans a job there (the engine plans it free after its
  shutdown and a boot). Seen in the seed-21 record: the 64-core job planned on the one busy arm node
  while the other two were powering down, which kept a 32-core job off that node;
- a plan powers nothing up (the engine boots the off nodes of the head job's plan at once): Slurm boots a
  node only when it allocates a job there.

With ``power_ups`` ((simulated time, node indices) pairs: the suite's cycle's recorded power-ups) those nodes
boot at those times if they are off then (a node on, booting or powering down is left alone).

With ``power_scan_s`` (power_save_interval) the idle power-down runs as slurmctld's power thread does
(:mod:`~slurm_plugin.sim.slurm_timing`, ``power_save_interval_s``): at a scaling tick only if a node changed
state (a job started or ended, a node came up, began or ended powering down) since the last scan, or
``power_scan_s`` has passed (``power_scan_strict``: 24.11's comparisons); and a node powering down is off at
the first scan after SuspendTimeout (whole seconds), not exactly SuspendTimeout after it began.

With ``main_delay_s`` the jobs are in the table at their submit: a backfill cycle sees them at once, the main
pass only ``main_delay_s`` later (a pass runs then), as slurmctld's backfill tests every pending job while a
new one waits for the main scheduler (:mod:`~slurm_plugin.sim.slurm_timing`, ``bf_sees_submit``).

With ``bf_depths`` (backfill cycle time -> depth) a cycle Slurm cut short tests only that many jobs of the queue
(from its top: the jobs it starts at once, the head, then the backfill candidates), as the record's
``completed testing N(M) jobs`` shows: a cycle yields its locks every 2 s (bf_yield_interval) and ends there if
the cluster's state changed meanwhile, which on a loaded host leaves most of a long queue untested.

With ``kill_clock`` (simulated time -> the first time-limit check at or after it) the jobs ``killed`` (Slurm
killed them at their limit) hold their nodes until the check that kills them (plus ``release_s``): the first at
or after their start second + their limit (slurmctld's ``job_time_limit``), not for their recorded run.

With ``bf_sees_end`` a backfill cycle takes the nodes of every job whose run has ended by its start: the
``release_s`` lag after an end is the main scheduler's, while the select plugin frees a job's cores when it
completes and the cycle tests the nodes as they are. Killed jobs mostly end at a check half a second before a
cycle on the same 30-s clock, so without it their nodes missed that cycle and idled 30 s, longer than
SuspendTime (``results/sim/fidelity/kill-check-s25/``).

With ``passes`` (simulated times, :func:`~slurm_plugin.sim.slurm_timing.batch_passes`) a submit runs no main
pass of its own: the queue is scheduled at those times, and at any other event that changed the cluster (a job
ended, a node came up or went down, a job started) or a backfill cycle, as slurmctld does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .cluster import Reservation
from .engine import BACKFILL, DOWN, END, PACK, READY, Engine
from .power import BOOTING, OFF, SHUTTING
from .slurm_select import select_nodes
from .slurm_timing import power_scan_due, shutdown_done
from .slurm_will_run import will_run_start
from ..workload.fit import eligible_groups

NO_PLAN_S = 1e9  # a node powering down is planned this far ahead: in no window that matters (Slurm: no plan)
BATCH = PACK + 100  # event kind: slurmctld's background loop runs the main scheduler for new submits
POWER_UP = PACK + 101  # event kind: the suite's cycle powered nodes up (recorded), data: their indices


@dataclass(frozen=True)
class BackfillWindow:
    """Nodes ``mask`` reserved for a pending job from ``begin`` to ``end`` (simulated seconds)."""

    begin: float
    end: float
    mask: np.ndarray


class SlurmBackfillEngine(Engine):
    """:class:`~slurm_plugin.sim.engine.Engine` planning backfill like Slurm (module docstring). ``resolution_s``
    is bf_resolution; ``epoch`` the wall-clock second of simulated time 0 (Slurm rounds on the wall clock).
    Used when ``reservations`` > 1 (with 1 the engine's EASY backfill runs unchanged). ``slurm_select``: place
    and plan around power saving as slurmctld does (module docstring); ``passes``: the main scheduler's passes
    for new submits (None: a pass at every submit, the engine's own)."""

    def __init__(self, *args, resolution_s: float = 60.0, epoch: float = 0.0, slurm_select: bool = False,
                 passes: np.ndarray | None = None, power_ups: list[tuple[float, np.ndarray]] = (),
                 plan_select: bool = False, power_scan_s: float | None = None, power_scan_strict: bool = False,
                 main_delay_s: float = 0.0, will_run: bool = False, kill_wait_s: float = 30.0,
                 bf_depths: dict[float, int] | None = None, release_s: float = 0.0,
                 kill_clock: Callable[[float], float] | None = None, killed: np.ndarray | None = None,
                 bf_sees_end: bool = False, **kw):
        super().__init__(*args, **kw)
        self.release_s, self.kill_clock, self.bf_sees_end = float(release_s), kill_clock, bf_sees_end
        self.killed = np.zeros(len(self.jobs), dtype=bool) if killed is None else np.asarray(killed, dtype=bool)
        if len(self.killed) != len(self.jobs):
            raise ValueError(f"SlurmBackfillEngine: killed has {len(self.killed)} entries for {len(self.jobs)} jobs")
        self._ended_early: set[int] = set()  # jobs a backfill cycle ended before their END event
        self.bf_depths = dict(bf_depths or {})  # backfill cycle time -> the queue depth it tests (cut short)
        self.will_run, self.kill_wait_s = will_run, int(kill_wait_s)
        self._eligible: dict[tuple, np.ndarray] = {}  # (arch mask, GRES name, GRES type) -> node mask
        self.main_delay_s = float(main_delay_s)
        self._main_sees = (self.jobs.submit + self.main_delay_s).tolist()  # when the main pass sees each job
        self.power_scan_s, self.power_scan_strict = power_scan_s, power_scan_strict
        self._last_scan, self._node_change = -math.inf, -math.inf  # whole epoch seconds
        self.plan_select = plan_select
        self.power_ups = [(float(t), np.asarray(n, dtype=np.int64)) for t, n in power_ups]
        self.passes = None if passes is None else np.asarray(passes, dtype=float)
        self._pass_due, self._seen_epoch = False, self._epoch
        if not (np.isfinite(resolution_s) and resolution_s > 0):
            raise ValueError(f"SlurmBackfillEngine: resolution_s must be > 0, got {resolution_s!r}")
        self.resolution_s, self.epoch = float(resolution_s), float(epoch)
        self.slurm_select = slurm_select
        self.boot_t = np.full(self.machine.nodes, -np.inf)  # when each node was last powered up
        cost = np.array([g.cost_per_hour for g in self.machine.groups])
        self._weight = cost[self.cluster.group]  # the rendered node Weight ranks groups by cost per hour
        if slurm_select:
            self.cluster.ready_time = self._ready_time

    def run(self, *args, **kw):
        if self.passes is not None:
            for when in self.passes.tolist():
                self._push(when, BATCH, None)
        for when, nodes in self.power_ups:
            self._push(when, POWER_UP, nodes)
        if self.main_delay_s:
            for when in sorted(set(self._main_sees)):
                self._push(when, BATCH, None)  # the pass a submit asks for
        return super().run(*args, **kw)

    def _handle(self, kind: int, data, t: float, more: bool) -> None:
        if kind == END and data in self._ended_early:
            self._ended_early.discard(data)
            return
        if kind == BACKFILL and self.bf_depths:
            self.bf_depth = self.bf_depths.get(t)
        if kind == BACKFILL and self.bf_sees_end:
            self._end_finished_runs(t, more)
        if kind == BATCH:
            self._pass_due = True
        elif kind == POWER_UP:
            off = data[self.cluster.state[data] == OFF]
            if len(off):
                self._boot(off, t)
                self._epoch += 1
                self._changed(t)
        elif kind == DOWN and self.power_scan_s is not None:
            return  # a shutdown ends at a power scan (_scale)
        else:
            if kind in (END, READY):
                self._changed(t)
            super()._handle(kind, data, t, more)

    def _end_finished_runs(self, t: float, more: bool) -> None:
        """Before a backfill cycle at ``t``: end every job whose run has ended (its END, ``release_s`` after
        that, is then skipped). Its nodes count as idle from its END as before, so that slurmctld's last_busy
        (the SuspendTime clock) stays at the run's end."""
        lag = self.release_s
        for j in [j for j in self.running if self.end[j] - lag <= t]:
            nodes = self.running[j][1]
            self._ended_early.add(j)
            self._changed(t)
            super()._handle(END, j, t, more)
            idle = nodes[self.cluster.njobs[nodes] == 0]
            self.idle_since[idle] = self.end[j]

    def _held(self, j: int, begin: float) -> float:
        """With ``kill_clock``, a job Slurm killed at its limit holds its nodes until the time-limit check at or
        after its start second + its limit, then ``release_s`` (module docstring); else its effective run."""
        if self.kill_clock is None or not self.killed[j]:
            return self._run_eff[j]
        end_time = math.floor(self.epoch + begin) + self._limit[j] - self.epoch  # slurmctld's job end_time
        return float(self.kill_clock(end_time)) - begin + self.release_s

    def set_power_start(self, off: np.ndarray, shutting: np.ndarray, since: np.ndarray) -> None:
        """Before :meth:`run`: nodes ``off`` powered down and nodes ``shutting`` powering down since ``since``
        (simulated seconds, <= 0) at simulated time 0, instead of on (the replay cluster's nodes as its record
        shows them at the first submit)."""
        c = self.cluster
        off, shutting = np.asarray(off, dtype=np.int64), np.asarray(shutting, dtype=np.int64)
        if len(off):
            c.state[off] = OFF
            c.touch(off, grew=True)
            self.meter.refresh(off)
            self.meter.set_powered(off, False)
        if len(shutting):
            c.state[shutting] = SHUTTING
            c.ready_at[shutting] = np.asarray(since, dtype=float) + c.shutdown_s[shutting]
            c.touch(shutting)
            np.subtract.at(c.idle_nodes, c.group[shutting], 1)
            self.meter.refresh(shutting)
            self._push_grouped(shutting, np.maximum(c.ready_at[shutting], 0.0), DOWN)

    def _changed(self, t: float) -> None:
        """A node changed state at simulated time ``t`` (slurmctld's ``last_node_update``, whole seconds)."""
        self._node_change = math.floor(self.epoch + t)

    def _start(self, j: int, r, cand: np.ndarray, t: float, nodes: np.ndarray | None = None) -> None:
        super()._start(j, r, cand, t, nodes)
        self._changed(t)

    def _scale(self, t: float) -> None:
        """The engine's idle power-down, with ``power_scan_s`` only at slurmctld's power scans: ends the
        shutdowns past SuspendTimeout, then suspends (module docstring)."""
        if self.power_scan_s is None:
            super()._scale(t)
            return
        now = math.floor(self.epoch + t)
        if not power_scan_due(now, self._last_scan, self._node_change, self.power_scan_s,
                              strict=self.power_scan_strict):
            return
        self._last_scan = now
        c = self.cluster
        shut = np.flatnonzero(c.state == SHUTTING)
        if len(shut):
            requested = self.epoch + c.ready_at[shut] - c.shutdown_s[shut]
            done = shut[shutdown_done(requested, now, c.shutdown_s[shut])]
            if len(done):
                super()._handle(DOWN, done, t, True)
        # the scan's own suspends and shutdowns bring no scan sooner: 22.05 does not touch last_node_update for
        # them; 24.11 sets it within the scan's second, which its strict test does not count
        super()._scale(t)

    def _schedule(self, t: float) -> None:
        """The engine's pass, skipped with ``passes`` when only submits came since the last one."""
        if self.passes is not None and not (self._pass_due or self._bf_due or self._epoch != self._seen_epoch):
            return
        self._pass_due = False
        super()._schedule(t)
        self._seen_epoch = self._epoch

    def _order(self, t: float, head: int | None = None):
        """The engine's priority order; with ``main_delay_s`` a main pass (not a backfill cycle) leaves out the
        jobs submitted less than ``main_delay_s`` ago."""
        keys, to_job = super()._order(t, head)
        if not self.main_delay_s or self._bf_due:
            return keys, to_job
        sees = self._main_sees
        if to_job is None:
            return [j for j in keys if sees[j] <= t], None
        return [k for k in keys if sees[self._by_rank_jobs[k]] <= t], to_job

    def _ready_time(self, nodes: np.ndarray, now: float) -> np.ndarray:
        """The cluster's ready times with a node powering down never ready (see the module docstring)."""
        t = type(self.cluster).ready_time(self.cluster, nodes, now)
        return np.where(self.cluster.state[nodes] == SHUTTING, now + NO_PLAN_S, t)

    def _boot(self, nodes: np.ndarray, t: float) -> None:
        self.boot_t[nodes] = t
        super()._boot(nodes, t)

    def _boot_reserved(self, t: float) -> None:
        if not self.slurm_select:
            super()._boot_reserved(t)

    def _choose(self, r, cand: np.ndarray, t: float) -> np.ndarray:
        if not self.slurm_select or len(cand) == r.nodes:
            return super()._choose(r, cand, t)
        st = self.cluster.state
        down = (st == OFF) | ((st == BOOTING) & (self.boot_t == t))  # booted in this pass: still down to Slurm
        return select_nodes(cand, r.nodes, self.cluster.free_c, self._weight, down)

    def _plan_choice(self, t: float):
        """With ``plan_select``: a plan's nodes as slurmctld's will-run test picks them (powered nodes by Weight,
        then powered-down ones; best fit), else None (the engine's: the nodes busy now first)."""
        if not self.plan_select:
            return None
        st = self.cluster.state
        down = (st == OFF) | ((st == BOOTING) & (self.boot_t == t))
        w = self._weight

        def choose(nodes, k):  # nodes are in index order: a stable sort keeps it among equal weights
            return nodes[np.lexsort((w[nodes], down[nodes]))[:k]]
        return choose

    def _reservation(self, j: int, r, t: float, ahead: bool = False):
        if not (self.plan_select or self.will_run):
            return super()._reservation(j, r, t, ahead)
        if self.resv is None or self.resv.job != j or self._resv_epoch != self._epoch:
            if self.resv is None or self.resv.job != j or ahead:
                self.resv_history[j] = []
            self.resv = self._will_run_plan(j, r, self.cluster.plan(j, r, t, choose=self._plan_choice(t)), t)
            self._resv_epoch = self._epoch
            self.resv_history[j].append(self.resv.time)
            if not self._all_on:
                self._boot_reserved(t)
        return self.resv

    def _will_run_plan(self, j: int, r, plan: Reservation | None, t: float,
                       exclude: np.ndarray | None = None) -> Reservation | None:
        """With ``will_run``: ``plan`` (the earliest fit, ``exclude`` left out) moved to the start Slurm's select
        plugin estimates (:func:`~slurm_plugin.sim.slurm_will_run.will_run_start`), never earlier, on the nodes
        that fit by then; a plan for now, or without ``will_run``, as it is."""
        if plan is None or not self.will_run or plan.time <= t:
            return plan
        when = self._will_run_time(j, r, t, exclude)
        if when is None or when <= plan.time:
            return plan
        if exclude is None:  # a plan without exclude is memoized as if made now: ask for one made at ``when``
            exclude = np.zeros(len(self.cluster.state), dtype=bool)
        return self.cluster.plan(j, r, when, exclude=exclude, choose=self._plan_choice(t))

    def _will_run_time(self, j: int, r, t: float, exclude: np.ndarray | None) -> float | None:
        """Slurm's estimated start of job ``j`` (simulated time) over the running jobs: candidates are the nodes
        whose arch and GRES kind suit it (any size, as Slurm's node bitmap), less ``exclude`` and those powering
        down; ``t`` (now) if it fits on them as they are (a plan from a later window end, ``TRY_LATER``, then
        starts there); a job still configuring on booting nodes ends at its allocation + limit (module docstring
        of :mod:`~slurm_plugin.sim.slurm_will_run`)."""
        c, jobs = self.cluster, self.jobs
        key = (int(jobs.arch_mask[j]), int(jobs.gres_name[j]), int(jobs.gres_type[j]))
        eligible = self._eligible.get(key)
        if eligible is None:
            eligible = self._eligible[key] = np.isin(c.group, eligible_groups(jobs, j, self.machine))
        cand = eligible & (c.state != SHUTTING)
        if exclude is not None:
            cand &= ~exclude
        fit_nodes = np.zeros(len(cand), dtype=bool)
        fit_nodes[c._nodes_of(r.groups)] = True
        fit_nodes &= cand
        running = []
        for k, (rk, nodes, _) in self.running.items():
            began = self.alloc[k] if t < self.begin[k] else self.begin[k]
            running.append((math.floor(self.epoch + began) + int(self._limit[k]), k, rk, nodes))
        running.sort(key=lambda x: (x[0], x[1]))
        overlap = [bool(cand[nodes].any()) for *_, nodes in running]
        free_c, free_m, free_g = c.free_c.copy(), c.free_m.copy(), c.free_g.copy()
        col = c._col(r, np.arange(len(cand)))
        done = [-1]

        def fits(last: int) -> bool:
            for k in range(done[0] + 1, last + 1):
                if not overlap[k]:
                    continue
                _, _, rk, nodes = running[k]
                free_c[nodes] += rk.cores
                if rk.mem:
                    free_m[nodes] += rk.mem
                if rk.gcount:
                    free_g[nodes, c._col(rk, nodes)] += rk.gcount
            done[0] = max(done[0], last)
            ok = fit_nodes & (free_c >= r.cores)
            if r.mem:
                ok &= free_m >= r.mem
            if r.gcount:
                ok &= (col >= 0) & (free_g[np.arange(len(cand)), np.maximum(col, 0)] >= r.gcount)
            return int(ok.sum()) >= r.nodes

        if fits(-1):  # the plugin's first test: the job fits on the candidates as they are now
            return t
        start = will_run_start([e for e, *_ in running], overlap, fits, math.floor(self.epoch + t), self.kill_wait_s)
        return None if start is None else start - self.epoch

    def _floor(self, t: float) -> float:
        res = self.resolution_s
        return math.floor((t + self.epoch) / res) * res - self.epoch

    def window(self, begin: float, limit: float, mask: np.ndarray) -> BackfillWindow:
        """Slurm's reservation of ``mask`` for a job planned at ``begin`` with time limit ``limit``."""
        return BackfillWindow(self._floor(begin), self._floor(begin + limit), mask)

    @staticmethod
    def _touching(windows: list[BackfillWindow], start: float, end: float) -> np.ndarray | None:
        """Nodes of the windows that touch [start, end] (Slurm: a window ending after ``start`` and beginning
        at or before ``end``), None if none does."""
        hit = [w.mask for w in windows if w.end > start and w.begin <= end]
        return np.logical_or.reduce(hit) if hit else None

    def plan_windowed(self, j: int, r, t: float, windows: list[BackfillWindow]) -> Reservation | None:
        """Earliest plan for job ``j`` from ``t`` on nodes no window touches while it would run: planned from
        ``start``, with the nodes of the windows touching [start, start + limit] left out; when the plan
        starts later and runs into a window on its nodes, tried again from its own start, so that those
        nodes are left out (backfill.c: ``_test_resv_overlap`` sets ``later_start`` to the job's planned
        start; until session 24 the replay tried again from the end of the window in the way). With
        ``will_run`` the plan starts at Slurm's estimate (:meth:`_will_run_plan`) and, as backfill.c's
        ``TRY_LATER``, a plan starting after the first window end past ``start`` (``later_start``: some node
        frees up there) is tried again from that end, on the nodes free from then."""
        c, limit = self.cluster, float(self.jobs.limit[j])
        start = t
        # starts only grow (a plan never starts before its ``start``). A retry starts at a window end (at most
        # one per window) or at a plan's start, when a window the last interval did not touch now does (it
        # then touches every later interval until a start passes its end: at most one per window), so
        # 2 * len(windows) + 1 tries always suffice
        for _ in range(2 * len(windows) + 1):
            exclude = self._touching(windows, start, start + limit)
            if exclude is None and start > t:  # a plan without exclude is memoized as if made at t
                exclude = np.zeros(len(c.state), dtype=bool)
            plan = self._will_run_plan(j, r, c.plan(j, r, start, exclude=exclude, choose=self._plan_choice(t)),
                                       t, exclude)
            if plan is not None and plan.time >= t + NO_PLAN_S / 2:  # only on nodes powering down: no plan
                plan = None
            if plan is None:  # try again once the first window in the way has ended
                later = [w.end for w in windows if w.end > start and w.begin <= start + limit]
                if not later:
                    return None
                start = min(later)
                continue
            if self.will_run:
                later_start = min((w.end for w in windows if w.end > start), default=None)
                if later_start is not None and plan.time > later_start:
                    start = later_start
                    continue
            end = plan.time + limit  # the times first: most windows miss them, and the mask test costs
            clash = [w.end for w in windows if w.end > plan.time and w.begin <= end and (w.mask & plan.mask).any()]
            if not clash:
                return plan
            start = plan.time if plan.time > start else min(clash)
        return None

    def _backfill_multi(self, rest, resv: Reservation, t: float, started: list[int]) -> None:
        """Each job of ``rest`` in order: start now on nodes no window touches until its limit, else plan it
        (:meth:`plan_windowed`) and reserve its window, up to ``reservations`` windows in all."""
        c, limit = self.cluster, self.jobs.limit
        windows = [self.window(resv.time, float(limit[resv.job]), resv.mask)]
        for j in np.asarray(rest).tolist():
            r = self._req_of(j)
            cand = c.candidates(r, exclude=self._touching(windows, t, t + float(limit[j])))
            if cand is not None:
                self._start(j, r, cand, t)
                started.append(j)
            elif len(windows) < self.reservations:
                plan = self.plan_windowed(j, r, t, windows)
                if plan is not None:
                    windows.append(self.window(plan.time, float(limit[j]), plan.mask))
            elif c.total_free_cores <= 0:
                break
