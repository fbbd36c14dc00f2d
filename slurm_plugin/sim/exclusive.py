"""The engine's loop for its commonest case, on counts instead of per-node arrays: one node group, every job
takes whole nodes, every node always on, first-fit placement, one reservation (EASY), backfill at every event
(an SWF trace on its own machine). Same schedule as :class:`~.engine.Engine`'s general loop, job for job.

Why counts are enough. With whole-node jobs on identical nodes a node is idle or busy until its job's planned end
(start + time limit). The head's plan (:meth:`.cluster.ClusterState.plan`) takes the k nodes free soonest,
preferring busy ones, so its time is the (k - idle)-th smallest planned end (each running job counted once per
node) and it holds ``m = max(0, k - busy nodes free by then)`` idle nodes: the m lowest-numbered ones (ties in
the plan's stable sort go by node index). First-fit starts take the lowest idle nodes, so between re-plans (a
release, or a start ahead of the head) the held idle nodes stay the lowest ones: a backfilled job that ends
before the reservation takes ``min(m, its nodes)`` of them, a longer one needs ``idle - m`` nodes outside. Every
other figure (energy, core-seconds, timeline) is summed in the engine's order, so it matches bit for bit.
"""

from __future__ import annotations

import bisect
import heapq
import logging
import time
from collections.abc import Callable

import numpy as np

from .hooks import FirstFit
from .outcome import Outcome

log = logging.getLogger(__name__)
INF = float("inf")


def eligible(e) -> bool:
    """Whether :func:`run` reproduces ``e``'s general loop: see the module docstring (no observer, no packing,
    no speed factors, no backfill clock, no power states)."""
    m, jobs = e.machine, e.jobs
    if (len(m.groups) != 1 or not e._all_on or e._bf_clocked or e.packing is not None or e.speed is not None
            or e.reservations != 1 or e.observer is not None or type(e.placement) is not FirstFit):
        return False
    g = m.groups[0]
    if not len(jobs):
        return False
    if (jobs.gres_count > 0).any() or (jobs.gres_name >= 0).any() or (jobs.cores != g.cores).any():
        return False
    if (jobs.nodes < 1).any() or (jobs.nodes > g.count).any():
        return False
    # arch / memory: every job must fit this group (the reader's fit check guarantees it for prepared runs)
    arch, mem = jobs.arch_mask, jobs.mem_gb
    if (arch == arch[0]).all() and (mem == mem[0]).all():  # one shape (an SWF trace): skip the sort
        shapes = [0]
    else:
        shapes = np.unique(np.column_stack([arch, mem]), axis=0, return_index=True)[1]
    return all(e.cluster.req(jobs, int(i)).options == ((0, -1),) and e.cluster.req(jobs, int(i)).whole
               for i in shapes)


def run(e, progress: Callable[[int], None] | None = None):
    """Simulate ``e`` (an :class:`~.engine.Engine` for which :func:`eligible` holds); returns its Outcome and
    leaves ``e``'s per-job arrays filled as the general loop would."""
    t0 = time.perf_counter()
    jobs, n = e.jobs, len(e.jobs)
    g = e.machine.groups[0]
    cpn, total_nodes, machine_cores = int(g.cores), int(g.count), int(e.machine.cores)
    submit = jobs.submit.tolist() + [INF]  # a sentinel: no bounds checks in the loop
    limit = e._limit  # the engine's list of jobs.limit
    knodes = jobs.nodes.tolist()
    run_eff = e.run_eff.tolist()
    dyn_w = e.meter.group_dyn_w[0]
    backfill, bf_max, static = e.backfill, e.bf_max, e.ranking.static
    pure = getattr(e.ranking, "pure", False)  # scoring has no side effect: skip it when nothing can start
    by_rank = e._by_rank_jobs if static else None  # the engine's lists of _by_rank and _rank_of
    # static: nodes and limit per rank (backfill scans), the same numbers as knodes and limit give
    size_r = jobs.nodes[e._by_rank].tolist() if static else None
    limit_r = jobs.limit[e._by_rank].tolist() if static else None
    rank_of = e._rank_list if static else None
    queue = e._queue  # static: queued ranks, sorted (shared with e._order)
    # dynamic pure rankings: the queue's node counts (how many queued jobs ask k nodes, their sum, a lower bound of
    # the smallest), so a pass whose outcome no order can change is not scored: see ``_exact_sums``
    ask = [0] * (total_nodes + 2) if pure and not static else None
    ask_sum, ask_min = 0, total_nodes + 1
    # a pure ranking whose order is fixed while a queue-wide condition holds (the DQN's backlog gate, see
    # DqnRanking.light_order): its queued jobs are also kept sorted by that order, with their area sum
    light = e.ranking.light_order(e._table) if ask is not None and hasattr(e.ranking, "light_order") else None
    if light is not None:
        l_rank, l_job, l_area, l_procs = light.rank_of, light.job_of, light.area, light.procs
        l_low, l_high, l_scores, l_sorted = light.low, light.high, light.scores, light.order
        l_order = np.asarray(l_job, dtype=np.int64)  # per rank: nodes and time limit (the kept order's scans)
        l_size, l_limit = jobs.nodes[l_order].tolist(), jobs.limit[l_order].tolist()
    queued, q_lo, q_hi = e._queued, e._lo, e._hi  # dynamic: which jobs wait (rows q_lo..q_hi), as e._order reads
    lq: list = []  # light: queued jobs' ranks, sorted
    l_rows: list = []  # light: queued jobs, ascending (they arrive in row order)
    l_sum = l_psum = 0.0  # light: their area and procs sums (whole numbers: exact in any order)
    begin = [np.nan] * n  # start times; NaN: never started
    # extra watts while a job runs (the meter's load_change, same floats: cpn x nodes, a whole number, x dyn_w); as a
    # list only for the loops that sum them (the lean loop does not)
    dw_a = cpn * jobs.nodes * dyn_w
    dw = None if static else dw_a.tolist()
    exact = ask is not None and _exact_sums(e, dw, cpn)
    heappush, heappop, insort = heapq.heappush, heapq.heappop, bisect.insort
    bisect_left, bisect_right = bisect.bisect_left, bisect.bisect_right

    free = total_nodes  # idle nodes
    heap: list = []  # (end, seq, job): job ends
    seq = 0
    ends: list = []  # sorted (planned end, seq, nodes) of running jobs, for plans
    pend_of: list = [None] * n  # job -> its entry in ``ends`` while it runs
    epoch = 0
    resv_job, resv_epoch, resv_time, held = -1, -1, 0.0, 0  # the head's plan: job, epoch, time, idle nodes held
    pending = 0
    watts = e.meter.watts
    core_s = float(e.group_core_s[0])
    fresh: list = []  # static: ranks queued since the last pass
    sc_epoch = sc_key = sc_last = -1  # static: epoch, head rank, last rank in its window of the last backfill scan
    # after each event time (one point per distinct time): time, pending jobs, idle nodes, watts; kept here only
    # when the watts' sums depend on their order, else rebuilt after the loop from the start times (_timeline)
    record = not _whole_watts(e.meter.watts, dw_a)
    tl_t: list = []
    tl_q: list = []
    tl_idle: list = []
    tl_w: list = []
    last_t = None
    nxt = events = last_report = 0

    def start(j: int, t: float) -> None:
        nonlocal free, seq, watts, core_s
        k = knodes[j]
        free -= k
        watts += dw[j]
        r = run_eff[j]
        begin[j] = t
        core_s += cpn * r * k
        seq += 1
        entry = (t + limit[j], k)
        insort(ends, entry)
        pend_of[j] = entry
        heappush(heap, (t + r, seq, j))

    def plan(k: int) -> tuple[float, int]:
        """(time, idle nodes held) of a plan for ``k`` > ``free`` nodes."""
        need, busy = k - free, 0
        for i, (when, nodes) in enumerate(ends):
            busy += nodes
            if busy >= need:
                # every busy node planned free by ``when`` (later entries with the same end included)
                for when2, nodes2 in ends[i + 1:]:
                    if when2 != when:
                        break
                    busy += nodes2
                return when, max(0, k - busy)
        raise RuntimeError(f"a job of {k} nodes can never fit")

    def reserve(j: int, k: int) -> None:
        """The head ``j``'s plan, kept until something is freed or starts ahead of it (as the engine caches it)."""
        nonlocal resv_job, resv_epoch, resv_time, held
        if resv_job != j or resv_epoch != epoch:
            resv_time, held = plan(k)
            resv_job, resv_epoch = j, epoch

    def backfill_jobs(window, t: float, size: list, lim: list, job_of: list | None) -> list[int]:
        """Start, in order, the jobs of ``window`` that fit now without delaying the head's plan; returns the
        entries of ``window`` started. Entries are jobs (``job_of`` None) or ranks (``job_of[rank]`` = job);
        ``size`` and ``lim`` are indexed by entry."""
        nonlocal held
        out = []
        for x in window:
            k = size[x]
            if k > free:
                continue
            if t + lim[x] <= resv_time:  # ends before the plan: may use the held nodes, lowest first
                start(x if job_of is None else job_of[x], t)
                held = held - k if held > k else 0
            elif k <= free - held:  # runs past it: only on nodes the plan does not hold
                start(x if job_of is None else job_of[x], t)
            else:
                continue
            out.append(x)
            if free <= 0:
                break
        return out

    # a static ranking with whole-number watts and core-seconds: a lean loop that sums neither (both rebuilt after
    # it, exact in any order) and orders equal ends by job, not by start (nothing else reads the order of the ends
    # popped before a pass); same passes as the loop below, same starts
    lean = static and backfill and not record and _whole_core_s(e.run_eff, jobs.nodes, cpn, float(e.group_core_s[0]))
    if dw is None and not lean:
        dw = dw_a.tolist()
    while lean and (nxt < n or heap):
        t = submit[nxt]
        if heap and heap[0][0] <= t:  # the next time is an end's: pop every end at that time
            t = heap[0][0]
            while True:
                j = heappop(heap)[1]
                free += knodes[j]
                del ends[bisect_left(ends, pend_of[j])]
                epoch += 1
                if not heap or heap[0][0] != t:
                    break
        while submit[nxt] <= t:
            x = rank_of[nxt]
            if queue and x < queue[-1]:
                insort(queue, x)
            else:  # FCFS: ranks come in order
                queue.append(x)
            if x < sc_last:  # only ranks ahead of the last scan's end are looked at again (see below)
                fresh.append(x)
            nxt += 1
        while queue and free > 0:
            key = queue[0]
            j = by_rank[key]
            k = knodes[j]
            if k <= free:
                del queue[0]
                free -= k
                begin[j] = t
                entry = (t + limit[j], k)
                insort(ends, entry)
                pend_of[j] = entry
                heappush(heap, (t + run_eff[j], j))
                epoch += 1
                continue
            if resv_job != j or resv_epoch != epoch:
                busy, need, i = 0, k - free, 0  # plan(k), inlined
                for when, nodes in ends:
                    i += 1
                    busy += nodes
                    if busy >= need:
                        break
                else:
                    raise RuntimeError(f"a job of {k} nodes can never fit")
                while i < len(ends) and ends[i][0] == when:  # every busy node planned free by then
                    busy += ends[i][1]
                    i += 1
                resv_time, held = when, (k - busy if k > busy else 0)
                resv_job, resv_epoch = j, epoch
            hi = 1 + bf_max
            if sc_epoch == epoch and sc_key == key:
                window = queue[bisect_right(queue, sc_last):hi]
                if fresh:
                    early = [x for x in fresh if bisect_left(queue, x) < hi]
                    if early:
                        window = sorted(early) + window
            else:
                window = queue[1:hi]
            sc_epoch, sc_key = epoch, key
            sc_last = queue[hi - 1] if len(queue) >= hi else queue[-1]
            got = None
            for x in window:
                kx = size_r[x]
                if kx > free:
                    continue
                if t + limit_r[x] <= resv_time:
                    held = held - kx if held > kx else 0
                elif kx > free - held:
                    continue
                j = by_rank[x]
                free -= kx
                begin[j] = t
                entry = (t + limit[j], kx)
                insort(ends, entry)
                pend_of[j] = entry
                heappush(heap, (t + run_eff[j], j))
                if got is None:
                    got = [x]
                else:
                    got.append(x)
                if free <= 0:
                    break
            if got:
                for x in got:
                    del queue[bisect_left(queue, x)]
            break
        if fresh:
            fresh.clear()
        events += 1
        if progress and nxt - last_report >= 2000:
            progress(nxt - last_report)
            last_report = nxt
        if not heap and nxt >= n and queue:
            log.warning("%d job(s) can never start (nothing running, nothing to come)", len(queue))
            break
    if lean:
        pending = len(queue)  # the lean loop counts no waiting jobs: they are its queue
    while not lean and (nxt < n or heap):
        t = submit[nxt]
        if heap and heap[0][0] < t:
            t = heap[0][0]
        while heap and heap[0][0] <= t:
            j = heappop(heap)[2]
            free += knodes[j]
            del ends[bisect_left(ends, pend_of[j])]  # an equal entry: the same sorted list remains
            watts -= dw[j]
            epoch += 1
        while submit[nxt] <= t:
            pending += 1
            if static:
                x = rank_of[nxt]
                if queue and x < queue[-1]:
                    insort(queue, x)
                else:  # FCFS: ranks come in order
                    queue.append(x)
                fresh.append(x)
            elif light is not None:
                insort(lq, l_rank[nxt])
                l_rows.append(nxt)
                l_sum += l_area[nxt]
                l_psum += l_procs[nxt]
            else:
                queued[nxt] = True
                q_hi = nxt + 1
                if ask is not None:
                    k = knodes[nxt]
                    ask[k] += 1
                    ask_sum += k
                    if k < ask_min:
                        ask_min = k
            nxt += 1
        if pending and static:
            # the queue is sorted by rank; jobs that start from its head leave it at once
            while queue and free > 0:
                key = queue[0]
                j = by_rank[key]
                k = knodes[j]
                if k <= free:
                    del queue[0]
                    # start(j, t), inlined (the commonest start)
                    free -= k
                    watts += dw[j]
                    r = run_eff[j]
                    begin[j] = t
                    core_s += cpn * r * k
                    seq += 1
                    entry = (t + limit[j], k)
                    insort(ends, entry)
                    pend_of[j] = entry
                    heappush(heap, (t + r, seq, j))
                    pending -= 1
                    epoch += 1
                    continue
                if backfill:
                    if resv_job != j or resv_epoch != epoch:  # reserve(j, k), inlined
                        resv_time, held = plan(k)
                        resv_job, resv_epoch = j, epoch
                    hi = 1 + bf_max
                    if sc_epoch == epoch and sc_key == key:
                        # nothing freed since the last pass and the same head: what it looked at and left still
                        # cannot start (idle nodes, outside ones and the time left only shrank); look at the rest
                        window = queue[bisect_right(queue, sc_last):hi]
                        if fresh:
                            early = [x for x in fresh if x < sc_last and bisect_left(queue, x) < hi]
                            if early:
                                window = sorted(early) + window
                    else:
                        window = queue[1:hi]
                    sc_epoch, sc_key = epoch, key
                    sc_last = queue[hi - 1] if len(queue) >= hi else queue[-1]
                    got = None
                    for x in window:  # backfill_jobs(window, t, size_r, limit_r, by_rank), inlined
                        kx = size_r[x]
                        if kx > free:
                            continue
                        if t + limit_r[x] <= resv_time:  # ends before the plan: may use the held nodes
                            held = held - kx if held > kx else 0
                        elif kx > free - held:  # runs past it: only on nodes the plan does not hold
                            continue
                        j = by_rank[x]
                        free -= kx
                        watts += dw[j]
                        r = run_eff[j]
                        begin[j] = t
                        core_s += cpn * r * kx
                        seq += 1
                        entry = (t + limit[j], kx)
                        insort(ends, entry)
                        pend_of[j] = entry
                        heappush(heap, (t + r, seq, j))
                        if got is None:
                            got = [x]
                        else:
                            got.append(x)
                        if free <= 0:
                            break
                    if got:
                        pending -= len(got)
                        for x in got:
                            del queue[bisect_left(queue, x)]
                break
        elif pending and light is not None and free > 0 and (
                l_sum <= l_low or (l_sum <= l_high and light.holds(l_sum))):
            # the gate holds the queue: walk the kept order (lq) as the static pass above walks its queue
            while lq and free > 0:
                x = lq[0]
                k = l_size[x]
                j = l_job[x]
                if k <= free:
                    del lq[0]
                    # start(j, t), inlined (as in the static pass above)
                    free -= k
                    watts += dw[j]
                    r = run_eff[j]
                    begin[j] = t
                    core_s += cpn * r * k
                    seq += 1
                    entry = (t + limit[j], k)
                    insort(ends, entry)
                    pend_of[j] = entry
                    heappush(heap, (t + r, seq, j))
                    epoch += 1
                    pending -= 1
                    del l_rows[bisect_left(l_rows, j)]
                    l_sum -= l_area[j]
                    l_psum -= l_procs[j]
                    continue
                if backfill and len(lq) > 1:
                    if resv_job != j or resv_epoch != epoch:  # reserve(j, k), inlined
                        busy, need, i = 0, k - free, 0  # plan(k), inlined
                        for when, nodes in ends:
                            i += 1
                            busy += nodes
                            if busy >= need:
                                break
                        else:
                            raise RuntimeError(f"a job of {k} nodes can never fit")
                        while i < len(ends) and ends[i][0] == when:  # every busy node planned free by then
                            busy += ends[i][1]
                            i += 1
                        resv_time, held = when, (k - busy if k > busy else 0)
                        resv_job, resv_epoch = j, epoch
                    got = None
                    for y in lq[1:1 + bf_max]:  # backfill_jobs(..., l_size, l_limit, l_job), inlined
                        ky = l_size[y]
                        if ky > free:
                            continue
                        if t + l_limit[y] <= resv_time:  # ends before the plan: may use the held nodes
                            held = held - ky if held > ky else 0
                        elif ky > free - held:  # runs past it: only on nodes the plan does not hold
                            continue
                        j = l_job[y]
                        free -= ky
                        watts += dw[j]
                        r = run_eff[j]
                        begin[j] = t
                        core_s += cpn * r * ky
                        seq += 1
                        entry = (t + limit[j], ky)
                        insort(ends, entry)
                        pend_of[j] = entry
                        heappush(heap, (t + r, seq, j))
                        if got is None:
                            got = [y]
                        else:
                            got.append(y)
                        if free <= 0:
                            break
                    if got:
                        pending -= len(got)
                        for y in got:
                            del lq[bisect_left(lq, y)]
                            j = l_job[y]
                            del l_rows[bisect_left(l_rows, j)]
                            l_sum -= l_area[j]
                            l_psum -= l_procs[j]
                break
        elif pending and (free > 0 or not pure):  # no idle node: the pass would stop before its first job
            if light is not None:  # the queue's sizes read here (no counts kept per job: few passes get here)
                sizes = [knodes[j] for j in l_rows]
                if min(sizes) > free:
                    keys = ()  # no queued job fits: the pass starts nothing in any order (see _exact_sums)
                elif exact and sum(sizes) <= free:
                    keys = l_rows  # all fit: all start, any order (read before the bookkeeping below changes it)
                elif backfill and len(sizes) <= 1 + bf_max and (fit := _starts_in_any_order(
                        l_rows, sizes, free, t, limit, plan, exact)) is not None:
                    keys = fit  # the jobs that fit start in every order (see _starts_in_any_order)
                elif l_sorted is not None:  # scored: the whole queue in order, in one call
                    keys = l_sorted(l_rows, t, l_psum, l_sum)
                else:  # scored: the whole queue in order (_order's truncated order is a prefix of it)
                    rows = np.array(l_rows, dtype=np.int64)
                    keys = rows[l_scores(rows, t, l_psum, l_sum).argsort(kind="stable")].tolist()
            else:
                if ask is not None:
                    while ask[ask_min] == 0:
                        ask_min += 1
                if ask is not None and ask_min > free:
                    keys = ()  # no queued job fits: the pass starts nothing in any order (see _exact_sums)
                elif ask is not None and exact and ask_sum <= free:
                    keys = (q_lo + np.flatnonzero(queued[q_lo:q_hi])).tolist()  # all fit: all start, any order
                else:
                    e._lo, e._hi = q_lo, q_hi
                    keys, _ = e._order(t, 64 + (bf_max if backfill else 0))
                    if len(keys) < pending and all(knodes[j] <= free for j in keys[:64]):
                        keys, _ = e._order(t)  # the truncated order might not stop inside: rank the whole queue
            started: list[int] = []
            for pos, j in enumerate(keys):
                if free <= 0:
                    break
                k = knodes[j]
                if k <= free:
                    start(j, t)
                    started.append(j)
                    epoch += 1
                    continue
                if backfill:
                    reserve(j, k)
                    started += backfill_jobs(keys[pos + 1:pos + 1 + bf_max], t, knodes, limit, None)
                break
            if started:
                pending -= len(started)
                if light is not None:
                    for j in started:
                        del lq[bisect_left(lq, l_rank[j])]
                        del l_rows[bisect_left(l_rows, j)]
                        l_sum -= l_area[j]
                        l_psum -= l_procs[j]
                else:
                    for j in started:
                        queued[j] = False
                    while q_lo < q_hi and not queued[q_lo]:
                        q_lo += 1
                    if ask is not None:
                        for j in started:
                            ask[knodes[j]] -= 1
                            ask_sum -= knodes[j]
        if fresh:
            fresh.clear()
        events += 1
        if not record:
            pass
        elif t == last_t:  # the engine's _sample: one point per distinct time
            tl_q[-1], tl_idle[-1], tl_w[-1] = pending, free, watts
        else:
            tl_t.append(t)
            tl_q.append(pending)
            tl_idle.append(free)
            tl_w.append(watts)
            last_t = t
        if progress and nxt - last_report >= 2000:
            progress(nxt - last_report)
            last_report = nxt
        if not heap and nxt >= n and pending:
            log.warning("%d job(s) can never start (nothing running, nothing to come)", pending)
            break
    if progress:
        progress(nxt - last_report)
    b = np.array(begin, dtype=float)
    if lean:  # the sums the lean loop skipped (whole numbers: the same values in any order)
        on = ~np.isnan(b)
        core_s = float(e.group_core_s[0]) + float(np.sum(cpn * e.run_eff[on] * jobs.nodes[on]))
    e.alloc[:] = b
    e.begin[:] = b
    e.end[:] = b + e.run_eff
    if record:
        joules, cost = _meter(tl_t, tl_w, e.meter.cost_rate)
        busy_cores = [machine_cores - f * cpn for f in tl_idle]
    else:  # the same figures from arrays (whole numbers: the same values as the loop's)
        ta, qa, idle, wa = _timeline(jobs.submit, b, e.end, jobs.nodes, dw_a.astype(float), total_nodes,
                                     float(e.meter.watts))
        joules, cost = _meter(ta, wa, e.meter.cost_rate)
        tl_t, tl_q, tl_w = ta.tolist(), qa.tolist(), wa.tolist()
        busy_cores = (machine_cores - idle * cpn).tolist()
        if lean:
            watts = float(wa[-1]) if len(wa) else float(e.meter.watts)  # nothing runs after the last event
    e.group_core_s[0] = core_s
    e.meter.joules, e.meter.cost, e.meter.watts, e.meter.t = joules, cost, watts, tl_t[-1] if tl_t else None
    e.pending = pending
    if light is not None and l_rows:  # jobs that never started: e._queued as the general loop leaves it
        queued[l_rows] = True
        q_lo, q_hi = l_rows[0], l_rows[-1] + 1
    e._lo, e._hi = q_lo, q_hi
    e.timeline = {"t": tl_t, "queue": tl_q, "busy_cores": busy_cores, "watts": tl_w}
    return Outcome(e.alloc, e.begin, e.end, e.group_core_s, joules, cost, int((jobs.run > jobs.limit).sum()), events,
                   e.timeline, time.perf_counter() - t0)


def _starts_in_any_order(rows: list, sizes: list, free: int, t: float, limit: list, plan, exact: bool):
    """The jobs of the queue ``rows`` (node counts ``sizes``) that fit the ``free`` idle nodes, when a pass starts
    them all, and nothing else, in every order; else None. The whole queue must be in the backfill window, some job
    must not fit, and with more than one fitting ``exact`` must hold (they start in the order's sequence, so the
    sums must be the same in any order).

    Why. Only jobs that fit now can start (idle nodes only get fewer). If those that fit fit together (their nodes
    F at most ``free``), none ever fails to fit, so the order's first job that does not fit now, H, heads the queue
    and the others start first (ahead of H) or are backfilled after it: a job J is backfilled iff it ends before
    the plan of H (``plan(size of H)``: time, idle nodes held) or fits on the idle nodes the plan does not hold. A
    plan made after starts is the plan of that state (see :func:`_exact_sums`); starts only delay its time (they
    free at most the nodes they take, later) and only shrink the idle nodes it holds, and a larger head only delays
    it. So J is started in every order if, for every size H may have, J ends by the time of H's plan made now, or
    all F fit on the idle nodes that plan does not hold (the other starts take at most F - J of them)."""
    total = sum(k for k in sizes if k <= free)
    if total > free:
        return None
    fit = [j for j, k in zip(rows, sizes) if k <= free]
    heads = sorted({k for k in sizes if k > free})
    if not heads or (len(fit) > 1 and not exact):
        return None
    late = max(t + limit[j] for j in fit)
    if late <= plan(heads[0])[0]:
        return fit  # every job that fits ends before every plan
    for k in heads:
        when, held = plan(k)
        if late > when and total > free - held:
            return None  # under a head of k nodes a job that fits may be left waiting
    return fit


def _whole_watts(base: float, dw: list) -> bool:
    """Whether the loop's watts come out the same in any order of starts and ends: the base and every job's extra
    watts whole numbers, and their total below 2**53 (float addition of whole numbers is then exact)."""
    w = np.asarray(dw, dtype=float)
    return (float(base).is_integer() and bool(np.all(np.isfinite(w) & (w == np.floor(w))))
            and abs(float(base)) + float(np.abs(w).sum()) < 2 ** 53)


def _whole_core_s(run: np.ndarray, nodes: np.ndarray, cpn: int, core_s0: float) -> bool:
    """Whether the loop's core-seconds sum comes out the same in any order: every job's run time whole, so every
    term cores x run x nodes is, and the total below 2**53."""
    return (float(core_s0).is_integer() and bool(np.all(np.isfinite(run) & (run == np.floor(run))))
            and abs(core_s0) + float(cpn) * float(np.sum(np.abs(run) * nodes)) < 2 ** 53)


def _timeline(submit: np.ndarray, begin: np.ndarray, end: np.ndarray, nodes: np.ndarray, dw: np.ndarray,
              total_nodes: int, base_w: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The timeline :func:`run` keeps per event, rebuilt from the start times (watts whole numbers: see
    :func:`_whole_watts`), as arrays: times, waiting jobs, idle nodes, watts. The loop's event times are the submit times and the started jobs' ends (begin + run, the
    float it pushed); after the last pass at time T a job waits if it was submitted by T and not started by T, and
    runs if it started by T and ends after T (a job ending at T was popped by a later pass at T: every start at T
    of a job that ends at T makes one more pass at T)."""
    on = ~np.isnan(begin)
    b, en, k, w = begin[on], end[on], nodes[on].astype(np.int64), dw[on]
    t = np.unique(np.concatenate([np.asarray(submit, dtype=float), en]))
    ob, oe = np.argsort(b), np.argsort(en)  # ties: any order (sums are read only past the last of equal times)
    nb, ne = np.searchsorted(b[ob], t, "right"), np.searchsorted(en[oe], t, "right")
    queued = np.searchsorted(np.sort(submit), t, "right") - nb

    def upto(vals, order, idx):  # sums of vals over the first idx entries in order
        return np.concatenate([np.zeros(1, dtype=vals.dtype), np.cumsum(vals[order])])[idx]

    busy = upto(k, ob, nb) - upto(k, oe, ne)
    watts = (base_w + upto(w, ob, nb)) - upto(w, oe, ne)
    return t, queued, total_nodes - busy, watts


def _exact_sums(e, dw: list, cpn: int) -> bool:
    """Whether the loop's float sums (watts, core-seconds) come out the same in any order of starts and ends:
    every term a whole number and every total below 2**53 (then float addition is exact).

    A pass of a pure ranking needs no order (and so no scoring) when no queued job fits the idle
    nodes (it starts nothing; the head's plan it would cache is a function of the head and the machine state,
    recomputed the same when next asked), or when every queued job fits at once (all start now, in any order; with
    exact sums the totals, the timeline and every later pass are the same as in the ranking's order)."""
    run = e.run_eff
    nodes = e.jobs.nodes
    top = float(e.meter.watts) + float(sum(dw))
    w = np.asarray(dw, dtype=float)
    return (float(e.meter.watts).is_integer() and bool(np.all(np.isfinite(w) & (w == np.floor(w))))
            and bool(np.all(run == np.floor(run))) and top < 2 ** 53
            and float(cpn) * float(np.sum(run * nodes)) + float(e.group_core_s[0]) < 2 ** 53)


def _meter(t: list, watts: list, cost_rate: float) -> tuple[float, float]:
    """The engine's PowerMeter.advance summed after the loop: joules and cost over the (time, watts after that time)
    samples. ``np.cumsum`` adds left to right like the meter, so the figures are the same to the last bit."""
    if len(t) < 2:
        return 0.0, 0.0
    ta = np.asarray(t, dtype=float)
    dt = ta[1:] - ta[:-1]
    joules = float(np.cumsum(np.asarray(watts[:-1], dtype=float) * dt)[-1])
    return joules, float(np.cumsum(cost_rate * dt)[-1])
