"""RLScheduler's select-then-wait semantics (Zhang et al., SC20; ``HPCSimPickJobs.py`` of
DIR-LAB/deep-batch-scheduler), for comparing with its published figures.

The best-scored queued job is committed: time moves forward (job arrivals and completions, one at a time)
until it fits, and it starts then. With backfill, its earliest start is estimated once, when it is chosen
(running jobs end at their requested times); while waiting, queued jobs in FCFS order that fit now and whose
estimate ends strictly before that time start. Jobs enter the queue only while the committed job waits, or
when the queue is empty. Their WFP3/UNICEP see a wait of ``-1 - submit`` (their ``scheduled_time`` is -1
while queued); ``mimic_wait=True`` reproduces that.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from ..rank import QueueView
from ..workload.jobs import JobTable
from .cluster import ClusterState
from .engine import Outcome
from .hooks import RankingPolicy
from .machine import Machine
from .power import PowerMeter


class SelectThenWait:
    def __init__(self, machine: Machine, jobs: JobTable, ranking: RankingPolicy, backfill: bool = True,
                 mimic_wait: bool = True):
        self.machine, self.jobs, self.ranking, self.backfill = machine, jobs, ranking, backfill
        self.mimic_wait = mimic_wait
        self.cluster = ClusterState(machine)
        self.cluster.all_on = True
        self.meter = PowerMeter(machine, self.cluster)
        n = len(jobs)
        self.begin = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.run_eff = np.minimum(jobs.run, jobs.limit)
        self.procs = jobs.procs.astype(float)
        self.group_core_s = np.zeros(len(machine.groups))
        self.queue: list[int] = []
        self.running: list = []  # heap of (actual end, job, req, nodes, slots)
        self.now = 0.0
        self.next = 0

    def run(self) -> Outcome:
        t0 = time.perf_counter()
        jobs, n = self.jobs, len(self.jobs)
        if not n:
            return self._outcome(t0)
        self.now = float(jobs.submit[0])
        self.queue.append(0)
        self.next = 1
        while True:
            best = self._select()
            r = self.cluster.req(jobs, best)
            if self.cluster.candidates(r) is None:
                self._wait_for(best, r)
            self._start(best, r)
            self.queue.remove(best)
            if not self._refill():
                break
        while self.running:
            self._release_next()
        return self._outcome(t0)

    def _select(self) -> int:
        q = np.asarray(self.queue)
        jobs = self.jobs
        now = -1.0 if self.mimic_wait else self.now
        view = QueueView(jobs.submit[q], jobs.limit[q], self.procs[q], jobs.qos_priority[q], now,
                         nodes=jobs.nodes[q])
        return int(q[np.lexsort((jobs.id[q], jobs.submit[q], self.ranking.scores(view)))[0]])

    def _wait_for(self, best: int, r) -> None:
        """Move time forward until ``best`` fits, backfilling (if on) against its first estimate."""
        shadow = self.cluster.plan(best, r, self.now).time if self.backfill else None
        while self.cluster.candidates(r) is None:
            if shadow is not None and self.queue:
                jobs, q = self.jobs, np.asarray(self.queue)
                q = q[np.lexsort((jobs.id[q], jobs.submit[q]))]  # FCFS
                q = q[(self.now + jobs.limit[q] < shadow) & (self.procs[q] <= self.cluster.total_free_cores)]
                for j in q.tolist():
                    rj = self.cluster.req(jobs, j)
                    if self.cluster.candidates(rj) is not None:
                        self._start(j, rj)
                        self.queue.remove(j)
            self._step()

    def _step(self) -> None:
        """One event: the next arrival if it comes no later than the next completion, else that completion."""
        release = self.running[0][0] if self.running else np.inf
        if self.next < len(self.jobs) and self.jobs.submit[self.next] <= release:
            self.now = max(self.now, float(self.jobs.submit[self.next]))
            self.queue.append(self.next)
            self.next += 1
        else:
            self._release_next()

    def _release_next(self) -> None:
        end, _, r, nodes, slots = heapq.heappop(self.running)
        self.meter.advance(end)
        self.now = max(self.now, end)
        self.cluster.release(r, nodes, slots)
        self.meter.load_change(nodes, -r.cores)

    def _refill(self) -> bool:
        """After a start: True if the queue has a job (adding the next arrival if it was empty)."""
        while not self.queue:
            if self.next >= len(self.jobs):
                return False
            self._step()
        return True

    def _start(self, j: int, r) -> None:
        c = self.cluster
        nodes = c.candidates(r)[:r.nodes]
        self.meter.advance(self.now)
        slots = c.allocate(r, nodes, self.now + self.jobs.limit[j])
        self.meter.load_change(nodes, r.cores)
        run = float(self.run_eff[j])
        self.begin[j], self.end[j] = self.now, self.now + run
        np.add.at(self.group_core_s, c.group[nodes], r.cores * run)
        heapq.heappush(self.running, (self.now + run, j, r, nodes, slots))

    def _outcome(self, t0: float) -> Outcome:
        return Outcome(self.begin.copy(), self.begin, self.end, self.group_core_s, self.meter.joules,
                       self.meter.cost, int((self.jobs.run > self.jobs.limit).sum()), 0, {},
                       time.perf_counter() - t0)
