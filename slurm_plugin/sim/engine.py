"""Slurm-like discrete-event simulation: priorities re-evaluated at every event, then EASY backfill.

At each event time (ends, boots, arrivals, scaling ticks) the engine ranks the whole queue, starts jobs in
that order while they fit, gives the first job that does not fit a reservation (the earliest time it fits if
running jobs end at their time limits, see :meth:`ClusterState.plan`), and then backfills: a lower job starts
now if it fits and either ends (by its time limit) before the reservation or fits on nodes outside it. A job
runs min(run time, time limit) (Slurm's TIMEOUT); on an off node it begins after the boot.
With ``after`` (job rows each job waits for, Slurm's ``--dependency=afterok``) a job joins the queue only once
it has arrived and every job it waits for has ended.
With ``bf_interval_s`` the backfill part runs only every that many seconds (Slurm's backfill thread,
``bf_interval``, default 30 s), the main pass still at every event; ``bf_times`` gives the backfill cycles'
times instead (a real cluster's, for the fidelity replay). A cycle with nothing pending waits for the next event.
"""

from __future__ import annotations

import bisect
import heapq
import logging
import time
from collections.abc import Callable, Sequence

import numpy as np

from ..gcpause import gc_paused
from ..rank import QueueView
from ..rank.heuristics import rows_view
from ..workload.fit import able_cores
from ..workload.jobs import JobTable
from . import exclusive
from .cluster import INF, ClusterState, Reservation
from .hooks import AlwaysOn, FirstFit, PackingPolicy, PackView, PlacementPolicy, PowerView, RankingPolicy, ScalingPolicy
from .machine import Machine
from .outcome import Outcome
from .power import BOOTING, OFF, ON, SHUTTING, PowerMeter

log = logging.getLogger(__name__)
END, READY, DOWN, TICK, BACKFILL, PACK = 0, 1, 2, 3, 4, 5
DEFAULT_BF_MAX_JOB_TEST = 500  # Slurm's bf_max_job_test default


class Engine:
    """One simulation run. ``observer(engine, t)`` (tests) is called after every event time. ``packing`` narrows
    pending jobs' options every ``packing.interval_s``; ``speed`` ([workload class, group] factors, last row for
    jobs without a class) makes a job run ``run / speed`` (the slowest of its nodes), capped by its limit."""

    def __init__(self, machine: Machine, jobs: JobTable, ranking: RankingPolicy, backfill: bool = True,
                 placement: PlacementPolicy | None = None, scaling: ScalingPolicy | None = None,
                 bf_max_job_test: int = DEFAULT_BF_MAX_JOB_TEST, bf_interval_s: float | None = None,
                 reservations: int = 1, observer: Callable[[Engine, float], None] | None = None,
                 bf_times: Sequence[float] | None = None,
                 packing: PackingPolicy | None = None, speed: np.ndarray | None = None,
                 after: Sequence[Sequence[int]] | None = None):
        self.machine, self.jobs, self.ranking, self.backfill = machine, jobs, ranking, backfill
        self.placement = placement or FirstFit()
        self._first_fit = type(self.placement) is FirstFit
        # :meth:`_candidates` may ask for FirstFit's one node only (what :meth:`_choose` would take of them all)
        self._pick_first = self._first_fit and type(self)._choose is Engine._choose
        self.scaling = scaling or AlwaysOn()
        self.bf_max = bf_max_job_test
        self.bf_depth: int | None = None  # this cycle tests only the first bf_depth jobs of the queue (None: bf_max)
        self.bf_interval = bf_interval_s  # None: backfill at every event; else like Slurm's bf_interval
        self.bf_times = bf_times
        self._bf_clocked = bf_interval_s is not None or bf_times is not None
        self._bf_due = False
        self.observer = observer
        self.packing, self.speed = packing, speed
        self.speed_timeouts = 0  # jobs cut by their time limit because they ran slower than nominal
        self.cluster = ClusterState(machine)
        self.meter = PowerMeter(machine, self.cluster)
        n = len(jobs)
        self.alloc = np.full(n, np.nan)
        self.begin = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.run_eff = np.minimum(jobs.run, jobs.limit)
        self.procs = jobs.procs.astype(float)
        # cores able to run each job (arch/GRES), only for rankings that read it (``needs_able``)
        self.able = able_cores(jobs, machine) if getattr(ranking, "needs_able", False) else None
        self._req: list = [None] * n
        self._shape_of = [-1] * n  # _shape_id of each job's request (-1: not resolved yet)
        self._shape_arr = np.full(n, -1, dtype=np.int64)  # the same as an array (long backfill windows)
        self._shape_member = np.zeros((0, len(machine.groups)), dtype=np.int64)
        self._procs, self._limit = self.procs.tolist(), jobs.limit.tolist()  # read one job at a time
        self._home = [-1] * n  # the group each queued job was counted against (backlog), -1: none
        self._shape_ix: dict = {}
        self._shape_req: list = []
        self._shape_groups: list[list[int]] = []  # per shape: its option groups
        # per shape: the sum of its groups' ``grown`` when it fit nowhere, or -1 (grown as shapes appear)
        self._unfit_at = np.full(64, -1, dtype=np.int64)
        self._grown_at, self._grown_sums = -1, {}  # :meth:`_grown_of`'s sums, valid while cluster.grown_n stays
        self._unfit_n = 0  # writes to ``_unfit_at`` (:meth:`_unfit_shapes` keeps its answer while none)
        self._unfit_key: tuple = ()
        self._unfit_marks = np.zeros(0, dtype=bool)
        self._all_on = self.scaling.interval_s is None
        self.reservations = reservations  # 1 = EASY; more = Slurm-like, one per blocked job in order
        if reservations > 1 and not self._all_on:
            raise ValueError("several reservations need every node on (no scaling policy)")
        self.cluster.all_on = self._all_on
        self.group_core_s = np.zeros(len(machine.groups))
        self.running: dict[int, tuple] = {}
        self.idle_since = np.zeros(machine.nodes)
        self.resv: Reservation | None = None
        self.resv_history: dict[int, list[float]] = {}
        self._epoch = 0
        self._failed_key: tuple = ()
        self._failed: set = set()
        self._resv_epoch = -1
        self._boots = 0  # nodes booted by the scaling policy change no epoch: counted for :meth:`_bf_settled`
        self._bf_last: tuple = ()  # what the last backfill pass saw, when it left every job it looked at settled
        self._bf_unsettled = False
        self._heap: list = []
        self._seq = 0
        self._queue: list[int] = []  # static rankings: the queued jobs' ranks, sorted
        self._queued = np.zeros(n, dtype=bool)  # dynamic rankings: which jobs wait (rows lo..hi)
        self._lo = self._hi = 0
        self.pending = 0
        # per node group, jobs counted against the cheapest group they may use: submitted so far, pending now
        self.arrived = np.zeros(len(machine.groups), dtype=np.int64)
        self.backlog = np.zeros(len(machine.groups), dtype=np.int64)
        if ranking.static:
            view = QueueView(jobs.submit, jobs.limit, self.procs, jobs.qos_priority, 0.0)
            order = np.lexsort((jobs.id, jobs.submit, ranking.scores(view)))
            self._rank_of = np.empty(n, dtype=np.int64)
            self._rank_of[order] = np.arange(n)
            self._by_rank = order
            self._by_rank_jobs = order.tolist()
            self._rank_list = self._rank_of.tolist()
        # every job, for rankings that compute per-job figures once per run (QueueView.rows/table)
        self._table = QueueView(jobs.submit, jobs.limit, self.procs, jobs.qos_priority, 0.0, self.able, jobs.nodes)
        self.timeline: dict[str, list[float]] = {"t": [], "queue": [], "busy_cores": [], "watts": []}
        self._deps = None if after is None else _Dependencies(after, n)

    # --- events ---------------------------------------------------------------------------------------------
    def _push(self, t: float, kind: int, data) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, data))

    def run(self, progress: Callable[[int], None] | None = None) -> Outcome:
        """Simulate every job; ``progress(k)`` is told every ~2,000 submitted jobs."""
        with gc_paused():  # the loops make only acyclic garbage; gen-0 scans of their tuples cost ~1/3
            if self._deps is None and exclusive.eligible(self):
                return exclusive.run(self, progress)  # same schedule, on counts (one group of whole-node jobs)
            return self._run(progress)

    def _run(self, progress: Callable[[int], None] | None) -> Outcome:
        t0 = time.perf_counter()
        jobs, n = self.jobs, len(self.jobs)
        self._run_eff = self.run_eff.tolist()  # read one job at a time (a replay may set run_eff after __init__)
        submit = jobs.submit.tolist()  # Python floats: the loop reads them one at a time
        nxt, events, last_report = 0, 0, 0
        if self.scaling.interval_s and n:
            self._push(float(submit[0]), TICK, None)
        if self.bf_times is not None and self.backfill:
            for when in sorted(self.bf_times):
                self._push(float(when), BACKFILL, None)
        elif self.bf_interval and self.backfill and n:
            self._push(float(submit[0]), BACKFILL, None)
        if self.packing is not None and n:
            self._push(float(submit[0]), PACK, None)
        while nxt < n or self._heap:
            t = min(submit[nxt] if nxt < n else INF, self._heap[0][0] if self._heap else INF)
            self.meter.advance(t)
            while self._heap and self._heap[0][0] <= t:
                _, _, kind, data = heapq.heappop(self._heap)
                self._handle(kind, data, t, more=nxt < n)
            while nxt < n and submit[nxt] <= t:
                if self._deps is None or self._deps.arrive(nxt):
                    self._enqueue(nxt)
                nxt += 1
            if self.pending:
                self._schedule(t)
            events += 1
            self._sample(t)
            if self.observer:
                self.observer(self, t)
            if progress and nxt - last_report >= 2000:
                progress(nxt - last_report)
                last_report = nxt
            if not self._heap and nxt >= n and self.pending:
                log.warning("%d job(s) can never start (nothing running, nothing to come)", self.pending)
                break
        if progress:
            progress(nxt - last_report)
        return Outcome(self.alloc, self.begin, self.end, self.group_core_s, self.meter.joules, self.meter.cost,
                       int((jobs.run > jobs.limit).sum()), events, self.timeline, time.perf_counter() - t0)

    def _handle(self, kind: int, data, t: float, more: bool) -> None:
        c = self.cluster
        if kind == END:
            r, nodes, slots = self.running.pop(data)
            c.release(r, nodes, slots)
            if self._all_on:
                self.meter.load_change(nodes, -r.cores, r.options[0][0] if len(r.options) == 1 else None)
            else:
                self.meter.refresh(nodes)
            if len(nodes) == 1:
                if c.njobs[nodes[0]] == 0:
                    self.idle_since[nodes[0]] = t
            else:
                self.idle_since[nodes[c.njobs[nodes] == 0]] = t
            self._epoch += 1
            if self._deps is not None:
                for child in self._deps.ended(data):
                    self._enqueue(child)
        elif kind == READY:
            nodes = data[c.state[data] == BOOTING]
            c.state[nodes] = ON
            c.touch(nodes)
            self.idle_since[nodes] = t
            self.meter.refresh(nodes)
            self._epoch += 1
        elif kind == DOWN:
            nodes = data[c.state[data] == SHUTTING]
            c.state[nodes] = OFF
            c.touch(nodes, grew=True)
            np.add.at(c.idle_nodes, c.group[nodes], 1)
            self.meter.refresh(nodes)
            self.meter.set_powered(nodes, False)
            if self._resv_active():
                self._boot_reserved(t)
            self._epoch += 1
        elif kind == BACKFILL:
            self._bf_due = True
            if self.bf_times is None and (more or self.running or self.pending):
                self._push(t + self.bf_interval, BACKFILL, None)
        elif kind == TICK:
            self._scale(t)
            if more or self.running or self.pending:
                self._push(t + self.scaling.interval_s, TICK, None)
        elif kind == PACK:
            if self.pending:
                self._pack(t)
            if more or self.running or self.pending:
                self._push(t + self.packing.interval_s, PACK, None)

    def _pack(self, t: float) -> None:
        """Apply the packing policy's narrowed requests (the simulator's ``scontrol update`` of pending jobs)."""
        keys, to_job = self._order(t)
        pending = np.asarray(keys if to_job is None else to_job[keys], dtype=np.int64)
        changed = self.packing.decide(PackView(t, pending, self.cluster, self._epoch, self._req_of))
        for j, req in changed.items():
            self._req[j] = req
            self._shape_of[j] = self._shape_arr[j] = self._shape_id(req)
        if changed:
            self._epoch += 1  # cached plans and failed shapes refer to the old requests

    def _scale(self, t: float) -> None:
        c = self.cluster
        idle = (c.njobs == 0) & (c.state == ON)
        view = PowerView(t, c.state.copy(), np.where(idle, t - self.idle_since, -1.0), self.pending,
                         self.arrived.copy(), self.backlog.copy())
        down, up = self.scaling.decide(view)
        down = down[idle[down]]
        if self._resv_active():
            down = down[~self.resv.mask[down]]  # reserved for the head job
        if len(down):
            c.state[down] = SHUTTING
            c.ready_at[down] = t + c.shutdown_s[down]
            c.touch(down)
            np.subtract.at(c.idle_nodes, c.group[down], 1)
            self.meter.refresh(down)
            self._push_grouped(down, c.ready_at[down], DOWN)
            self._epoch += 1
        up = up[c.state[up] == OFF]
        if len(up):
            self._boot(up, t)

    def _boot(self, nodes: np.ndarray, t: float) -> None:
        c = self.cluster
        self._boots += 1
        c.state[nodes] = BOOTING
        c.ready_at[nodes] = c.boot_end(t + c.boot_s[nodes])
        c.touch(nodes)
        self.meter.refresh(nodes)
        self.meter.set_powered(nodes, True)
        self._push_grouped(nodes, c.ready_at[nodes], READY)

    def _push_grouped(self, nodes: np.ndarray, times: np.ndarray, kind: int) -> None:
        for when in np.unique(times):
            self._push(float(when), kind, nodes[times == when])

    # --- queue ----------------------------------------------------------------------------------------------
    def _enqueue(self, j: int) -> None:
        self.pending += 1
        if not self._all_on and self._req_of(j).options:
            home = self._home[j] = self._req_of(j).options[0][0]
            self.arrived[home] += 1
            self.backlog[home] += 1
        if self.ranking.static:
            bisect.insort(self._queue, self._rank_list[j])
        else:
            self._queued[j] = True
            self._hi = max(self._hi, j + 1)
            self._lo = min(self._lo, j)  # a job released by its dependencies may be older than the queue

    def _order(self, t: float, head: int | None = None) -> tuple[list[int], np.ndarray | None]:
        """The queue in priority order as (keys, key->job map or None if keys are jobs). Static rankings keep
        the queue sorted by rank, so nothing is rebuilt; dynamic ones are re-scored here, and with ``head``
        only (at least) the first ``head`` jobs are returned."""
        if self.ranking.static:
            return self._queue, self._by_rank
        q = self._lo + np.flatnonzero(self._queued[self._lo:self._hi])
        by_rows = getattr(self.ranking, "scores_rows", None)  # scores from (rows, table, now): no per-pass view
        if by_rows is not None:
            score = by_rows(q, self._table, t)
        else:
            score = self.ranking.scores(rows_view(self._table, q, t))
        # the queue is in (submit, id) order already, so a stable sort by score is the full priority order
        if head is not None and len(q) > 2 * head:
            kth = np.partition(score, head - 1)[head - 1]
            sel = score < kth
            sel[np.flatnonzero(score == kth)[:head - int(sel.sum())]] = True  # earliest of the ties
            q, score = q[sel], score[sel]
        return q[np.argsort(score, kind="stable")].tolist(), None

    def _dequeue(self, started: list[int]) -> None:
        self.pending -= len(started)
        if not self._all_on:
            for j in started:
                home = self._home[j]  # as counted at enqueue (packing may narrow _req since)
                if home >= 0:
                    self.backlog[home] -= 1
        if self.ranking.static:
            for j in started:
                k = bisect.bisect_left(self._queue, self._rank_list[j])
                del self._queue[k]
        else:
            self._queued[started] = False
            while self._lo < self._hi and not self._queued[self._lo]:
                self._lo += 1

    # --- scheduling -----------------------------------------------------------------------------------------
    def _schedule(self, t: float) -> None:
        """One pass: start in priority order while jobs fit, reserve for the first that does not, backfill."""
        c = self.cluster
        started: list[int] = []
        head = 64 + (self.bf_max if self.backfill else 0)
        keys, to_job = self._order(t, head)
        if len(keys) < self.pending and not self._stops_within(keys, to_job):
            keys, to_job = self._order(t)
        for pos, key in enumerate(keys):
            if c.total_free_cores <= 0:
                break
            j = key if to_job is None else self._by_rank_jobs[key]
            r = self._req_of(j)
            cand = self._fit_now(int(self._shape_of[j]), r)
            if cand is not None:
                self._start(j, r, cand, t)
                started.append(j)
                self._epoch += 1  # a job ahead of the head took resources: its plan must be redone
                if self._resv_active() and self.resv.job != j:
                    self.resv_history[self.resv.job] = []  # outranked: its next plan may be later
                continue
            if self.backfill and (not self._bf_clocked or self._bf_due):
                stop = pos + 1 + self.bf_max
                if self.bf_depth is not None:
                    stop = min(stop, self.bf_depth)
                window = keys[pos + 1:stop]
                resv = self._reservation(j, r, t, ahead=bool(started))
                if self.reservations == 1:
                    seen = (self._epoch, self._boots, resv, j, window)
                    if not self._bf_settled(seen):
                        n0, self._bf_unsettled = len(started), False
                        self._backfill(self._window_jobs(window, to_job), resv, t, started)
                        self._bf_last = seen if len(started) == n0 and not self._bf_unsettled else ()
                else:
                    self._backfill_multi(self._window_jobs(window, to_job), resv, t, started)
            break
        self._bf_due = False
        if started:
            self._dequeue(started)

    def _window_jobs(self, window: list[int], to_job) -> list[int] | np.ndarray:
        """The jobs of the backfill window's keys (:meth:`_order`: keys are jobs, or ranks of static rankings).
        A window of more than 64 keys comes as an array (:meth:`_backfill` filters it on arrays first), the
        ranks mapped to jobs by one gather."""
        if len(window) > 64:
            keys = np.fromiter(window, np.int64, len(window))
            return keys if to_job is None else to_job[keys]
        return window if to_job is None else list(map(self._by_rank_jobs.__getitem__, window))

    def _bf_settled(self, seen: tuple) -> bool:
        """Whether a backfill pass over ``seen`` = (epoch, boots, reservation, head, window keys) would start
        nothing, because the last pass saw the same and every job it looked at failed for a reason that still
        holds: nothing was released, booted, started or re-planned since (same epoch and boot count; the head and
        its reservation the same), so free capacity is the same and the reservation holds the same nodes, and
        each such reason (too many cores, fits nowhere, fits nowhere outside the reservation) depends on
        nothing else, or only gets stronger as time passes (a job that ended before the reservation may no
        longer). The one reason that can weaken, a job ending before the reservation whose first candidate node
        is not ready in time (a later pass may pick another node), marks the pass unsettled (:meth:`_backfill`)."""
        last = self._bf_last
        return (bool(last) and last[0] == seen[0] and last[1] == seen[1] and last[2] is seen[2]
                and last[3] == seen[3] and last[4] == seen[4])

    def _stops_within(self, keys: list[int], to_job) -> bool:
        """Whether a pass over the truncated order ``keys`` surely stops inside it: some job among the first
        64 does not fit now (the pass then only backfills from the next ``bf_max`` jobs)."""
        c = self.cluster
        for key in keys[:64]:
            j = key if to_job is None else self._by_rank_jobs[key]
            r = self._req_of(j)  # resolves the shape
            if self._fit_now(int(self._shape_of[j]), r) is None:
                return True
        return False

    def _backfill(self, rest: list[int], resv: Reservation, t: float, started: list[int]) -> None:
        """Start each job of ``rest`` (in order) that fits now without delaying ``resv``. Jobs are looked at by
        request shape (:meth:`_shape_id`): a shape that fits nowhere (or nowhere outside ``resv``) stays so for
        the rest of the pass, so its later jobs are skipped without looking at the cluster. The window is
        short on most passes (~17 jobs on large.yaml at 20,000 jobs), so this is a plain loop: nothing in it is
        per shape or per window when few jobs wait."""
        c = self.cluster
        if not len(rest) or c.total_free_cores <= 0:
            return
        fits_not_outside = self._failed_shapes(resv)  # carried over from earlier passes with this reservation
        if len(rest) > 64:
            rest = self._may_start(rest, resv, t, fits_not_outside)
        fits_nowhere: set[int] = set()
        may_fit: set[int] = set()  # shapes not known to fit nowhere (the cluster's ``grown`` holds in a pass)
        outside: dict[tuple, int] = {}  # idle nodes outside the reservation, per option set (whole-node jobs)
        procs, limit, shape_of, until = self._procs, self._limit, self._shape_of, resv.time
        for j in rest:
            key = shape_of[j]
            if procs[j] > c.total_free_cores or key in fits_nowhere:
                continue
            # with power states only nodes that are on are sure to be ready (checked below), so a job that ends
            # before the reservation may still use reserved nodes and skips the outside-only fast paths
            ends_before = t + limit[j] <= until
            if not ends_before and key in fits_not_outside:
                continue
            r = self._req[j]
            if key < 0:
                r = self._req_of(j)
                key = shape_of[j]
                if key in fits_nowhere or (not ends_before and key in fits_not_outside):
                    continue
            if key not in may_fit:
                if self._known_unfit(key):
                    fits_nowhere.add(key)
                    continue
                may_fit.add(key)
            if not ends_before and r.whole:
                if r.options not in outside:
                    outside[r.options] = c.idle_outside(r, resv.mask)
                if outside[r.options] < r.nodes:
                    fits_not_outside.add(key)
                    continue
            if not ends_before:
                # it must fit outside the reservation (a node ready now cannot hold it past the reservation's
                # time): ask that first; only if it does not is the unexcluded answer needed (fits nowhere?)
                cand = self._candidates(r, resv.mask)
                if cand is None:
                    if self._fit_now(key, r) is None:
                        fits_nowhere.add(key)
                    else:
                        fits_not_outside.add(key)
                    continue
                self._start(j, r, cand, t)
                started.append(j)
                outside.clear()
                continue
            cand = self._fit_now(key, r)
            if cand is None:
                fits_nowhere.add(key)
                continue
            if not self._all_on:  # it ends before the reservation if its nodes are ready now
                nodes = self._choose(r, cand, t)
                ready = c.ready_one(int(nodes[0]), t) if len(nodes) == 1 else c.ready_time(nodes, t).max()
                if ready + limit[j] > resv.time:
                    cand = self._candidates(r, resv.mask)
                    if cand is None:
                        fits_not_outside.add(key)
                        self._bf_unsettled |= ends_before  # another node may be ready in time later
                        continue
            self._start(j, r, cand, t)
            started.append(j)
            outside.clear()

    def _may_start(self, rest, resv: Reservation, t: float, fits_not_outside: set) -> list[int]:
        """The jobs of a long window that :meth:`_backfill`'s loop would not skip at once, found on arrays: not
        more cores than are free (free only shrinks in a pass), a shape not known to fit nowhere, and a shape
        not known to fit nowhere outside ``resv`` unless the job ends before it. The loop checks each again."""
        idx = rest if isinstance(rest, np.ndarray) else np.fromiter(rest, np.int64, len(rest))
        keep = self.procs[idx] <= self.cluster.total_free_cores
        shape = self._shape_arr[idx]
        dead = np.zeros(len(self._shape_req) + 1, dtype=bool)  # last slot: shape -1 (not resolved yet)
        dead[:-1] = self._unfit_shapes()
        keep &= ~dead[shape]
        if fits_not_outside:
            dead[:] = False
            dead[list(fits_not_outside)] = True
            keep &= ((t + self.jobs.limit[idx]) <= resv.time) | ~dead[shape]
        return idx[keep].tolist()

    def _unfit_shapes(self) -> np.ndarray:
        """Per shape: whether it is known to fit nowhere now (see :meth:`_fit_now`)."""
        n = len(self._shape_req)
        if len(self._shape_member) != n:
            m = np.zeros((n, len(self.machine.groups)), dtype=np.int64)
            for i, groups in enumerate(self._shape_groups):
                m[i, groups] = 1
            self._shape_member = m
        key = (self.cluster.grown_n, self._unfit_n, n)  # the marks and the counters it reads are unchanged
        if self._unfit_key != key:
            self._unfit_key = key
            self._unfit_marks = self._unfit_at[:n] == self._shape_member @ self.cluster.grown
        return self._unfit_marks

    def _backfill_multi(self, rest, resv: Reservation, t: float, started: list[int]) -> None:
        """Like Slurm's backfill: each job of ``rest`` that cannot start without delaying an earlier
        reservation gets its own (on nodes no earlier reservation holds), up to ``reservations`` in all."""
        c, limit = self.cluster, self.jobs.limit
        resvs = [resv]
        for j in np.asarray(rest).tolist():
            r = self._req_of(j)
            end = t + limit[j]
            block = np.zeros(len(c.state), dtype=bool)
            for res in resvs:
                if end > res.time:
                    block |= res.mask
            cand = c.candidates(r, exclude=block if block.any() else None)
            if cand is not None:
                self._start(j, r, cand, t)
                started.append(j)
            elif len(resvs) < self.reservations:
                taken = np.logical_or.reduce([res.mask for res in resvs])
                plan = c.plan(j, r, t, exclude=taken)
                if plan is not None:
                    resvs.append(plan)
            elif c.total_free_cores <= 0:
                break

    def _failed_shapes(self, resv: Reservation) -> set:
        """Request shapes (:meth:`_shape_id`) that fit nowhere outside ``resv``: they stay so until something is
        released or starts ahead of the head, since free capacity then only shrinks and the reservation stays."""
        key = (self._epoch, id(resv))
        if self._failed_key != key:
            self._failed_key, self._failed = key, set()
        return self._failed

    def _fit_now(self, s: int, r):
        """``cluster.candidates(r)`` for a request of shape ``s``, without asking when the shape fit nowhere and
        none of its groups can have grown since (:attr:`ClusterState.grown`: only releases and finished
        shutdowns add capacity, so the answer would still be None)."""
        grown = self._grown_of(s)
        if self._unfit_at[s] == grown:
            return None
        cand = self._candidates(r)
        if cand is None:
            self._unfit_at[s] = grown
            self._unfit_n += 1
        return cand

    def _candidates(self, r, exclude: np.ndarray | None = None) -> np.ndarray | None:
        """``cluster.candidates(r, exclude)``, or for a one-node request placed by the engine's FirstFit only
        the node :meth:`_choose` would take of them (it then takes that one as it is)."""
        if self._pick_first and r.nodes == 1:
            return self.cluster.first_fit(r, exclude)
        return self.cluster.candidates(r, exclude)

    def _known_unfit(self, s: int) -> bool:
        """Whether :meth:`_fit_now` would answer None for shape ``s`` without asking the cluster."""
        return self._unfit_at[s] == self._grown_of(s)

    def _grown_of(self, s: int) -> int:
        """The sum of shape ``s``'s groups' ``grown`` counters (kept per shape until any counter moves)."""
        c = self.cluster
        if c.grown_n != self._grown_at:
            self._grown_at, self._grown_sums = c.grown_n, {}
        v = self._grown_sums.get(s)
        if v is None:
            g = c.grown
            v = self._grown_sums[s] = int(sum(g[i] for i in self._shape_groups[s]))
        return v

    def _req_of(self, j: int):
        r = self._req[j]
        if r is None:
            r = self._req[j] = self.cluster.req(self.jobs, j)
            self._shape_of[j] = self._shape_arr[j] = self._shape_id(r)
        return r

    def _shape_id(self, r) -> int:
        """A small number per distinct request (by value: equal requests fit and fail alike)."""
        s = self._shape_ix.get(r)
        if s is None:
            s = self._shape_ix[r] = len(self._shape_req)
            self._shape_req.append(r)
            self._shape_groups.append([g for g, _ in r.options])
            if s == len(self._unfit_at):
                self._unfit_at = np.concatenate([self._unfit_at, np.full(s, -1, dtype=np.int64)])
        return s

    def _reservation(self, j: int, r, t: float, ahead: bool = False) -> Reservation:
        """The head's plan (cached until something is released or starts ahead of it). ``resv_history`` keeps
        its successive times while nothing of higher priority started in front of it: they never increase."""
        if self.resv is None or self.resv.job != j or self._resv_epoch != self._epoch:
            if self.resv is None or self.resv.job != j or ahead:
                self.resv_history[j] = []
            self.resv = self.cluster.plan(j, r, t)
            self._resv_epoch = self._epoch
            self.resv_history[j].append(self.resv.time)
            if not self._all_on:
                self._boot_reserved(t)
        return self.resv

    def _resv_active(self) -> bool:
        """A reservation exists and its job still waits."""
        return self.resv is not None and np.isnan(self.begin[self.resv.job])

    def _boot_reserved(self, t: float) -> None:
        """The plan counts on reserved off nodes booting now (and shutting ones right after): start them."""
        c = self.cluster
        nodes = self.resv.nodes
        off = nodes[c.state[nodes] == OFF]
        if len(off):
            self._boot(off, t)

    def _choose(self, r, cand: np.ndarray, t: float) -> np.ndarray:
        if len(cand) == r.nodes:
            return cand
        if r.nodes == 1 and self._first_fit:  # FirstFit's choice of one node: the first on, else the first
            state = self.cluster.state
            if state[cand[0]] == ON:
                return cand[:1]
            k = int(np.argmax(state[cand] == ON))
            return cand[k:k + 1]
        return self.placement.choose(cand, self.cluster.state[cand] == ON, r.nodes)

    def _start(self, j: int, r, cand: np.ndarray, t: float, nodes: np.ndarray | None = None) -> None:
        c = self.cluster
        if nodes is None:
            nodes = self._choose(r, cand, t)
        begin = t
        if not self._all_on and len(nodes) == 1:
            begin = c.ready_one(int(nodes[0]), t)
            if c.state[nodes[0]] == OFF:
                self._boot(nodes, t)
        elif not self._all_on:
            begin = float(c.ready_time(nodes, t).max())
            off = nodes[c.state[nodes] == OFF]
            if len(off):
                self._boot(off, t)
        slots = c.allocate(r, nodes, begin + self._limit[j])
        if self._all_on:
            self.meter.load_change(nodes, r.cores, r.options[0][0] if len(r.options) == 1 else None)
        else:
            self.meter.refresh(nodes)
        run = self._held(j, begin)
        if self.speed is not None:
            nominal = float(self.jobs.run[j]) / float(self.speed[self.jobs.wclass[j], c.group[nodes]].min())
            run = min(nominal, float(self.jobs.limit[j]))
            self.speed_timeouts += nominal > run
        self.alloc[j], self.begin[j], self.end[j] = t, begin, begin + run
        self.running[j] = (r, nodes, slots)
        if len(r.options) == 1:
            self.group_core_s[r.options[0][0]] += r.cores * run * len(nodes)
        else:
            np.add.at(self.group_core_s, c.group[nodes], r.cores * run)
        self._push(begin + run, END, j)

    def _held(self, j: int, begin: float) -> float:
        """How long job ``j``, beginning at ``begin``, holds its nodes (its effective run)."""
        return self._run_eff[j]

    def _sample(self, t: float) -> None:
        tl = self.timeline
        if tl["t"] and tl["t"][-1] == t:
            for k in ("t", "queue", "busy_cores", "watts"):
                tl[k].pop()
        tl["t"].append(t)
        tl["queue"].append(self.pending)
        tl["busy_cores"].append(self.machine.cores - self.cluster.total_free_cores)
        tl["watts"].append(self.meter.watts)


class _Dependencies:
    """Which jobs wait for which (``after[j]``: the rows job j waits for). A job is released when it has
    arrived and its last dependency has ended."""

    def __init__(self, after: Sequence[Sequence[int]], n: int):
        self.waiting = np.array([len(a) for a in after], dtype=np.int64)
        self.children: list[list[int]] = [[] for _ in range(n)]
        for j, parents in enumerate(after):
            for p in parents:
                self.children[p].append(j)
        self.arrived = np.zeros(n, dtype=bool)

    def arrive(self, j: int) -> bool:
        """Job j arrived: whether it may queue now."""
        self.arrived[j] = True
        return self.waiting[j] == 0

    def ended(self, j: int) -> list[int]:
        """Job j ended: the arrived jobs this releases."""
        out = []
        for c in self.children[j]:
            self.waiting[c] -= 1
            if self.waiting[c] == 0 and self.arrived[c]:
                out.append(c)
        return out
