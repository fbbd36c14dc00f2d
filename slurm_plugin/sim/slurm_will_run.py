"""When Slurm's select plugin says a pending job will start: the estimate behind every backfill plan.

Backfill (sched/backfill) asks select/cons_tres when and where a job that cannot start now will run
(``SELECT_MODE_WILL_RUN``, src/plugins/select/cons_common/job_test.c ``_will_run_test``, the same in 22.05 and
24.11). The answer is not the earliest time the job fits. The plugin takes every running job, sorted by its
``end_time`` (start + time limit; a job still CONFIGURING on booting nodes keeps the end of its allocation time
until slurmctld resets its start), and removes them in groups, testing the pending job after each group:

- a job with no node among the pending job's candidate nodes is skipped;
- the first job removed fixes a barrier: its end rounded up to the next multiple of 30 s (a whole 30 s further
  when it is already one);
- after removing a job it peeks at the *next job of the whole list* (also one that will be skipped): the group
  ends when that one ends more than ``window`` after the barrier (``window`` starts at 30 s);
- between groups ``window`` doubles until it reaches the next job's end;
- once the pending job fits, its start is the ``end_time`` of the last job removed (a job already past its end:
  ``end_time`` + KillWait, at least now + 1; ``_guess_job_end``).

So a plan can lie well after the moment the job's nodes free up: a group that takes in a job ending later
(the peek looks at the next job of the whole list, so jobs on other nodes keep a group open) gives its end. In
a 22.05 replay's log (seed 71) a 64-core job whose node was free 30 s later was planned 180 s ahead, the end of
a 3-node job on other nodes, and a 2-minute job was backfilled onto its node in between; a planner that
reserves the node from its free time keeps that job off and powers up another node for it.

Not modelled: the plugin's caps (a test after 200 removals in a group, 2 s of wall time per job).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

WINDOW_S = 30  # _will_run_test's first time_window (bf_window_scale unset)


def guess_job_end(end: int, now: int, kill_wait_s: int) -> int:
    """``_guess_job_end`` with OverTimeLimit 0: a job past its end ends KillWait later, at least a second from now."""
    return max(end + kill_wait_s, now + 1)


def will_run_start(ends: Sequence[int], overlap: Sequence[bool], fits: Callable[[int], bool], now: int,
                   kill_wait_s: int = 30) -> int | None:
    """Slurm's start estimate (module docstring) for a pending job that does not fit now.

    ``ends``: every running job's ``end_time`` (whole epoch seconds), ascending (equal ends in job order);
    ``overlap[k]``: whether job ``k`` has a node among the pending job's candidates; ``fits(k)``: whether the
    pending job fits once every overlapping job among the first ``k + 1`` has ended (called with increasing
    ``k``). Returns the estimated start (epoch seconds), or None if it fits after no group."""
    n = len(ends)
    window, barrier, pos = WINDOW_S, None, 0
    more = True
    while more:
        last = None
        while True:
            if pos >= n:
                more = False
                break
            k = pos
            pos += 1
            if not overlap[k]:
                continue
            if barrier is None:
                barrier = ends[k] + (window - ends[k] % window)
            last = k
            if pos >= n:
                more = False
                break
            if ends[pos] > barrier + window:
                break
        if last is None:
            return None
        window *= 2
        while pos < n and ends[pos] > barrier + window:
            window *= 2
        if fits(last):
            return ends[last] if ends[last] > now else guess_job_end(ends[last], now, kill_wait_s)
    return None
