"""A minimal FCFS + EASY backfill loop on a homogeneous machine, written from EASY's definition (Lifka, "The ANL/IBM
SP scheduling system", JSSPP 1995; Mu'alem and Feitelson, IEEE TPDS 2001), to measure the engine against and to
check its schedules. Plain Python, no numpy in the loop; whole-node jobs, nodes counted, not named.

EASY: jobs wait in arrival order. Whenever a job arrives or ends, start jobs from the head of the queue while they
fit. If the head does not fit, compute its *shadow time* (the earliest time enough nodes are free, if every
running job ends at its requested time) and the *extra nodes* (nodes free at the shadow time beyond what the
head needs), then start, in queue order, any later job that fits now and either ends (by its request) by the
shadow time or needs no more than the extra nodes (which it then uses up). The head never waits for a later job.

Conventions shared with the engine (so the two can be compared job for job): a job runs min(run time, time
limit); every job that arrives or ends at one instant is in before the scheduler runs at that instant;
``bf_window`` caps how many jobs after the head backfill looks at (None: the whole queue, which is what EASY
means; Slurm's ``bf_max_job_test`` default is 500).
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np


@dataclass
class ReferenceResult:
    """Start time of every job (NaN = never started), the number of scheduling passes and the loop's seconds."""

    begin: np.ndarray
    passes: int
    wall_s: float


def easy_fcfs(nodes: int, submit, run, limit, size, bf_window: int | None = None) -> ReferenceResult:
    """Simulate FCFS + EASY on ``nodes`` identical nodes. Arrays per job, in submit order: submit time, run time,
    time limit (requested time), nodes asked for. Returns each job's start time."""
    t0 = time.perf_counter()
    submit, run, limit, size = (np.asarray(a).tolist() for a in (submit, run, limit, size))
    n = len(submit)
    if any(k > nodes or k < 1 for k in size):
        raise ValueError(f"a job asks for more than {nodes} nodes or for none")
    begin = [float("nan")] * n
    free = nodes
    queue: list[int] = []  # waiting jobs, in arrival order
    ends: list[tuple[float, int]] = []  # heap of (actual end, job) of running jobs
    running: dict[int, float] = {}  # job -> its requested end (start + limit)
    nxt, passes = 0, 0

    def start(j: int, now: float) -> None:
        nonlocal free
        free -= size[j]
        begin[j] = now
        running[j] = now + limit[j]
        heapq.heappush(ends, (now + min(run[j], limit[j]), j))

    while nxt < n or ends:
        now = min(submit[nxt] if nxt < n else float("inf"), ends[0][0] if ends else float("inf"))
        while ends and ends[0][0] <= now:  # every job ending now frees its nodes
            _, j = heapq.heappop(ends)
            free += size[j]
            del running[j]
        while nxt < n and submit[nxt] <= now:  # every job submitted by now is queued
            queue.append(nxt)
            nxt += 1
        if not queue:
            continue
        passes += 1
        # 1. start from the head while jobs fit
        while queue and size[queue[0]] <= free:
            start(queue.pop(0), now)
        if not queue or free == 0:
            continue
        # 2. the head's shadow time and the extra nodes
        head = queue[0]
        avail, shadow = free, None
        for req_end, k in sorted((running[j], size[j]) for j in running):
            if shadow is not None and req_end > shadow:
                break
            avail += k
            if shadow is None and avail >= size[head]:
                shadow = req_end
        extra = avail - size[head]
        # 3. backfill: fits now, and ends by the shadow time or stays within the extra nodes
        window = queue[1:] if bf_window is None else queue[1:1 + bf_window]
        started = []
        for j in window:
            if free == 0:
                break
            if size[j] > free:
                continue
            if now + limit[j] <= shadow:
                start(j, now)
            elif size[j] <= extra:
                start(j, now)
                extra -= size[j]
            else:
                continue
            started.append(j)
        if started:
            gone = set(started)
            queue = [j for j in queue if j not in gone]
    return ReferenceResult(np.asarray(begin, dtype=float), passes, time.perf_counter() - t0)
