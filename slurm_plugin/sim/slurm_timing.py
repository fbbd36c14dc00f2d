"""Optional Slurm timing the simulator's engine does not model by itself, for replays of a real cluster.

Everything is off by default (:data:`OFF`), so the simulator's own schedules (and the golden ones of its
tests) never move; ``hetsched sim fidelity`` switches on what the records of real slurmctld runs show:

- ``release_s``: a job's nodes take new work this long after its recorded end (epilog, the completion RPC,
  then the next scheduling pass). Seen on Slurm 22.05 as 0-3 s between a job's EndTime and the start of the
  job that waited for its nodes.
- ``submit_s``: a submitted job waits this long for slurmctld's main scheduler (which runs at most every
  ``batch_sched_delay``, 3 s by default, for new batch jobs; the engine runs it at every submit). Seen on
  22.05 as 0.3-3 s between sbatch and the "sched: Allocate" of a job that fit at once.
- ``bf_sees_submit`` (with ``submit_s`` and ``bf_resolution_s``): ``submit_s`` delays the main scheduler only:
  a backfill cycle tests every job pending when it begins, also one submitted a moment before (backfill.c
  builds its queue from the job list at the cycle's start). Without it a job reaches the backfill queue
  ``submit_s`` late too. Seen on 22.05 (seed 63): a 64-core arm job submitted 0.74 s before a backfill cycle
  was started by that cycle on a powered-down node; the replay, holding it back 1.5 s, planned it behind the
  other arm jobs and started it 1,050 s late.
- ``overrun``: a job past its time limit holds its nodes until slurmctld kills it, which happens at the next
  time-limit check (every 30 s on slurmctld's clock, PERIODIC_TIMEOUT), not at the limit: the replay gives
  such jobs their recorded run (end - start) instead of min(run, limit).
- ``boot_s``/``shutdown_s``: the cluster's real boot time (ResumeProgram to the node registering) and
  SuspendTimeout (slurmctld shows a node powering down for that long whatever the program does).
- ``suspend_time_s``/``suspend_tick_s``: Slurm's SuspendTime, checked by slurmctld's power thread about every
  second (the engine's IdleSuspend checks every SuspendTime / 4).
- ``reservations``: Slurm's backfill plans a reservation for every pending job it tests (up to
  bf_max_job_test), so a lower job may not delay any of them; the engine's power mode allows only EASY's one
  (the head's). With N > 1 a replay with power saving gets N (the engine's several-reservation pass does not
  add a boot time when it checks a reservation: an approximation, boots here take seconds).
- ``bf_resolution_s``: Slurm's backfill plan (:mod:`~slurm_plugin.sim.slurm_backfill`): whole-node
  reservations in windows rounded down to bf_resolution (60 s) on the wall clock, stacked per node, instead
  of the engine's one-plan-per-node reservations (with ``reservations`` > 1).
- ``config_tick_s``/``config_epoch``: a job given nodes that must boot stays CONFIGURING until slurmctld's
  time-limit check (every 30 s on its own clock, PERIODIC_TIMEOUT) finds them up (``job_time_limit:
  Configuration for JobId=... complete``); only then does it start (StartTime is reset to that moment) and its
  run begins. Seen on 22.05: every job that powered a node up started at such a check, 20-30 s after the
  boot (3-5 s) ended. ``config_epoch`` is one such check (epoch seconds), e.g. slurmctld's start.
- ``idle_at_start_s``: how long every node had been idle when the replay's first job came (the cluster came up
  before it, so SuspendTime counts from then, not from the first submit). Seen on 22.05 in every record: the
  nodes no job touched began powering down 6-20 s after the first submit (SuspendTime 20 s), so the first
  wave's jobs found them powering down (unusable until off, then booted: started at the time-limit check after
  70-85 s), where the engine, counting from the first submit, kept them on and started those jobs at once.
- ``slurm_select`` (with ``bf_resolution_s``): nodes chosen, planned and powered up as slurmctld does with
  power saving (:mod:`~slurm_plugin.sim.slurm_select`, :mod:`~slurm_plugin.sim.slurm_backfill`): powered
  nodes by Weight before powered-down ones, best fit; no plan on a node powering down; no boot for a plan.
- ``batch_sched_delay_s``/``sched_start``: a submit does not run slurmctld's main scheduler; it only asks for a
  pass (``queue_job_scheduler``), which the background loop runs on its next one-second tick once
  ``batch_sched_delay`` (3 s by default) has passed since its last such pass, or at the full pass every
  ``sched_interval`` (60 s) from slurmctld's start ``sched_start`` (src/slurmctld/controller.c
  ``_slurmctld_background``, 22.05 and 24.11; the loop wakes on whole wall-clock seconds). Any other event
  (a job's end, a node up) still runs the scheduler at once and sees the new jobs. Seen on 22.05 (seed 21):
  jobs submitted at 9.5, 10.3, 10.8, 11.8, 12.5 and 13.4 s started at 10, 13, 13, 13, 13 and 16 s. Replaces
  ``submit_s``'s fixed shift (:func:`batch_passes`, used by
  :class:`~slurm_plugin.sim.slurm_backfill.SlurmBackfillEngine`).
- ``power_save_interval_s``/``power_scan_strict``: slurmctld's power thread (src/slurmctld/power_save.c,
  ``_power_save_thread``, read in Debian's 22.05.8 and 24.11.5 source packages) wakes every second but runs
  its node scan (``_do_power_work``) only if a node changed state since its last scan (``last_node_update``:
  a job allocated, completing or done, a node registering after its boot; not the scan's own suspends, for
  which 22.05.8 leaves it alone and 24.11.5 sets it within the scan's second) or ``power_save_interval``
  seconds have passed (SlurmctldParameters, 10 s by default: man slurm.conf of 22.05.8). 22.05.8 compares
  with >=, 24.11.5 with > (``power_scan_strict``). The scan is where both suspend decisions are made, on
  whole seconds (``time_t``): an idle node is suspended once ``last_busy < now - SuspendTime`` (last_busy:
  when its last job completed), and a node powering down is off once ``power_save_req_time +
  SuspendTimeout < now``. Without the switch the engine checks every ``suspend_tick_s`` whether idle >=
  SuspendTime and ends a shutdown exactly SuspendTimeout after it began. Seen in the records
  (``results/sim/fidelity/power_timing.py``): nodes began powering down a median 21.3-23.8 s after their
  last job ended (SuspendTime 20; sinfo polled every 1-6 s) and showed powering down a median 11.8-15.2 s
  (SuspendTimeout 10); the replay gives 21.0-21.7 s and 10.0 s without the switch, 21.7-22.7 s and 11-15 s
  with it (:class:`~slurm_plugin.sim.slurm_backfill.SlurmBackfillEngine`, :func:`power_scan_due`,
  :func:`suspend_due`, :func:`shutdown_done`).
- ``power_start``: the replay starts with each node in the power state its record shows at the first submit
  (off; powering down since the recorder first saw it so, off SuspendTimeout later at the earliest; else on,
  idle ``idle_at_start_s``) instead of every node on. Seen in seed 13 (22.05): every node was powering down
  2.7 s before the first submit and off by 5.8 s, where the replay, counting from on, had them powering down
  until 10-22 s; in the 24.11 records with the suite 9 of 10 nodes were off at the first submit
  (:func:`~slurm_plugin.sim.fidelity_replay.power_at_start`).
- ``priority_calc_period_s``/``priority_epoch``: a pending job's age factor changes only when slurmctld's
  priority thread recalculates it (src/plugins/priority/multifactor/priority_multifactor.c ``_decay_thread``,
  read in Debian's 22.05.8 source package: it sets every pending job's priority from its age at the
  thread's wake, then sleeps until ``PriorityCalcPeriod`` after the previous wake; man slurm.conf 22.05.8:
  PriorityCalcPeriod, 5 minutes by default; the suite renders 1 minute where it runs slurmdbd, the
  container cluster). Between wakes a job keeps the priority it was given at submit (age 0) or at the last
  wake, where the engine's multifactor counts the age continuously. ``priority_epoch`` is the epoch second
  of one wake (the thread starts with slurmctld). With PriorityWeightAge 1000 and PriorityMaxAge 7 days a
  job gains a point per 604.8 s of wait: in Slurm at the first wake after that (:func:`priority_calc_time`,
  :class:`CalcPeriodPriority`).
- ``site_factor``: each job's SiteFactor (the suite's bands, set through ``scontrol update``) is added to
  its multifactor priority one for one, in the order they were recorded; with ``site_factor_submit`` the first
  value recorded counts from the job's submit even when the recorder first saw it after the job's start
  (:func:`~slurm_plugin.sim.fidelity_replay.site_factor_at_start`).
- ``cycle_power``: the suite's cycle ran beside Slurm (the container replays, ``record["cycle_journal"]``) and
  its power-ups are replayed at their recorded times: a node the cycle powered up (``scontrol update
  state=power_up``: slurmctld runs ResumeProgram at once, as its log's ``powering up node`` shows) boots then
  if it is off in the simulation; Slurm's own SuspendTime still powers it down once idle. The 24.11 trial
  (seed 5, 12 jobs) had the cycle's warm pool boot armn3 3 times, each powered down again 20 s later.
- ``will_run``/``kill_wait_s`` (with ``bf_resolution_s``): a backfill plan starts when Slurm's select plugin
  estimates, not at the earliest time the job fits: running jobs are removed in groups by their end times and
  the plan takes the end of the last one removed (:mod:`~slurm_plugin.sim.slurm_will_run`; KillWait for a job
  past its end), often later than the nodes free up, which leaves room to backfill shorter jobs there.
- ``kill_at_check`` (with ``bf_resolution_s``): a job Slurm killed at its time limit holds its nodes until the
  time-limit check that kills it (every 30 s on slurmctld's clock, ``config_epoch``: the first at or after its
  start second + its limit, src/slurmctld/job_mgr.c ``job_time_limit``), not for its recorded run.
- ``bf_sees_end`` (with ``bf_resolution_s``): a backfill cycle takes the nodes of every job whose run has ended
  by its start; ``release_s`` delays only the main scheduler. The time-limit checks run half a second before
  the backfill cycles on the same clock, so a killed job's nodes are free for the cycle right after the kill:
  in seeds 71 and 73, 25 of the 30 killed jobs ended 0.2-0.8 s before a backfill cycle
  (:class:`~slurm_plugin.sim.slurm_backfill.SlurmBackfillEngine`).
- ``bf_depth`` (a replay of a record): a backfill cycle that Slurm cut short (it tested fewer jobs than were
  pending: it yields its locks every 2 s and stops if the state changed meanwhile, common on a loaded host with
  a long queue) tests only as many jobs of the queue in the replay
  (:func:`~slurm_plugin.sim.fidelity_replay.cut_short_cycles`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .hooks import IdleSuspend, ScalingPolicy, ScoreRanking
from .machine import Machine
from .views import PowerView

PERIODIC_TIMEOUT_S = 30.0  # slurmctld checks time limits this often (src/slurmctld/controller.c, 22.05 and 24.11)
SCHED_INTERVAL_S = 60.0  # slurmctld's full main-scheduler pass (sched_interval default, 22.05 and 24.11)
BATCH_SCHED_DELAY_S = 3.0  # SchedulerParameters batch_sched_delay default
POWER_SAVE_INTERVAL_S = 10.0  # SlurmctldParameters power_save_interval default (man slurm.conf, 22.05 and 24.11)


@dataclass(frozen=True)
class SlurmTiming:
    """Which Slurm timing a replay models (see the module docstring); the default models none of it."""

    release_s: float = 0.0
    submit_s: float = 0.0
    overrun: bool = False
    boot_s: float | None = None
    shutdown_s: float | None = None
    suspend_time_s: float | None = None
    suspend_tick_s: float = 1.0
    site_factor: bool = False
    reservations: int = 1
    config_tick_s: float | None = None
    config_epoch: float = 0.0
    bf_resolution_s: float | None = None
    idle_at_start_s: float = 0.0
    slurm_select: bool = False
    batch_sched_delay_s: float | None = None
    sched_start: float = 0.0
    cycle_power: bool = False
    plan_select: bool = False
    power_save_interval_s: float | None = None
    power_scan_strict: bool = False
    power_start: bool = False
    priority_calc_period_s: float | None = None
    priority_epoch: float = 0.0
    site_factor_submit: bool = False
    bf_sees_submit: bool = False
    will_run: bool = False
    kill_wait_s: float = 30.0
    bf_depth: bool = False
    kill_at_check: bool = False
    bf_sees_end: bool = False

    def __post_init__(self):
        for name in ("release_s", "submit_s", "boot_s", "shutdown_s", "suspend_time_s", "config_tick_s",
                     "bf_resolution_s", "idle_at_start_s", "batch_sched_delay_s", "power_save_interval_s",
                     "priority_calc_period_s", "kill_wait_s"):
            v = getattr(self, name)
            if v is not None and not (np.isfinite(v) and v >= 0):
                raise ValueError(f"SlurmTiming.{name} must be a finite number >= 0, got {v!r}")
        if self.reservations < 1:
            raise ValueError(f"SlurmTiming.reservations must be >= 1, got {self.reservations!r}")
        if self.suspend_tick_s <= 0:
            raise ValueError(f"SlurmTiming.suspend_tick_s must be > 0, got {self.suspend_tick_s!r}")
        if self.will_run and self.bf_resolution_s is None:
            raise ValueError("SlurmTiming.will_run needs bf_resolution_s (Slurm's backfill engine)")
        for name in ("bf_sees_submit", "kill_at_check", "bf_sees_end"):
            if getattr(self, name) and self.bf_resolution_s is None:
                raise ValueError(f"SlurmTiming.{name} needs bf_resolution_s (Slurm's backfill engine)")
        for name in ("config_tick_s", "bf_resolution_s", "power_save_interval_s", "priority_calc_period_s"):
            if getattr(self, name) == 0:
                raise ValueError(f"SlurmTiming.{name} must be > 0 (None: switched off)")


OFF = SlurmTiming()


@dataclass(frozen=True)
class SlurmSuspend(IdleSuspend):
    """Slurm's SuspendTime, checked every ``tick_s`` (slurmctld's power thread wakes about every second)."""

    tick_s: float = 1.0
    name: str = "slurm-suspend"
    epoch: float | None = None
    busy_lag_s: float = 0.0

    @property
    def interval_s(self) -> float:
        return self.tick_s

    def decide(self, view: PowerView) -> tuple[np.ndarray, np.ndarray]:
        """Idle >= SuspendTime; with ``epoch`` (the epoch second of simulated 0) slurmctld's own test on whole
        seconds instead (:func:`suspend_due`), a node's ``last_busy`` being ``busy_lag_s`` before the engine
        counts it idle (the replay's ``release_s``: slurmctld sets last_busy when the job completes, the
        engine frees its nodes that much later)."""
        if self.epoch is None:
            return super().decide(view)
        idle = np.flatnonzero(view.idle_for >= 0)
        last_busy = self.epoch + view.now - view.idle_for[idle] - self.busy_lag_s
        due = suspend_due(last_busy, math.floor(self.epoch + view.now), self.suspend_time_s)
        return idle[due], np.empty(0, dtype=np.int64)


def timed_machine(machine: Machine, timing: SlurmTiming) -> Machine:
    """``machine`` with the recorded boot/shutdown times (the engine already allocates by node Weight, i.e.
    cost per hour, as the suite renders it)."""
    groups = list(machine.groups)
    change = {k: v for k, v in (("boot_s", timing.boot_s), ("shutdown_s", timing.shutdown_s)) if v is not None}
    if change:
        groups = [dataclasses.replace(g, **change) for g in groups]
    return dataclasses.replace(machine, groups=tuple(groups))


def effective_runs(run: np.ndarray, limit: np.ndarray, timing: SlurmTiming) -> np.ndarray:
    """How long each job holds its nodes in the simulation: min(run, limit) (Slurm's TIMEOUT at the limit),
    or the whole recorded run with ``overrun``; plus ``release_s``."""
    held = np.asarray(run, dtype=float) if timing.overrun else np.minimum(run, limit)
    return held + timing.release_s


def scaling_for(timing: SlurmTiming, epoch: float | None = None) -> ScalingPolicy | None:
    """Slurm's own idle power-down, or None when the replay ran without power saving; with
    ``power_save_interval_s`` and ``epoch`` (the epoch second of simulated 0) on slurmctld's whole seconds."""
    if timing.suspend_time_s is None:
        return None
    whole = epoch if timing.power_save_interval_s is not None else None
    return SlurmSuspend(suspend_time_s=timing.suspend_time_s, tick_s=timing.suspend_tick_s, epoch=whole,
                        busy_lag_s=timing.release_s if whole is not None else 0.0)


def with_site_factor(ranking: ScoreRanking, timing: SlurmTiming) -> ScoreRanking:
    """The multifactor ranking with the job's SiteFactor (the table's ``qos_priority`` column in a replay)
    added one for one, as slurmctld adds it; unchanged without ``site_factor``."""
    if not timing.site_factor:
        return ranking
    return dataclasses.replace(ranking, scorer=dataclasses.replace(ranking.scorer, weight_qos=1.0, max_qos=1.0))


def priority_calc_time(now: float, phase: float, period: float) -> float:
    """The last wake of slurmctld's priority thread at or before simulated time ``now``, the thread waking at
    ``phase`` + k * ``period`` (simulated seconds; module docstring, ``priority_calc_period_s``)."""
    return phase + math.floor((now - phase) / period) * period


@dataclass(frozen=True)
class CalcPeriodPriority:
    """A multifactor scorer whose age factor is the one slurmctld's priority thread set at its last wake
    (:func:`priority_calc_time`): ``inner`` scores the queue as at that wake, a job submitted since then at
    age 0 (its priority at submit). Used by :func:`with_calc_period`."""

    inner: Callable
    period_s: float
    phase_s: float = 0.0

    def __call__(self, q):
        tick = priority_calc_time(q.now, self.phase_s, self.period_s)
        return self.inner(dataclasses.replace(q, now=tick, submit=np.minimum(q.submit, tick)))


def with_calc_period(ranking: ScoreRanking, timing: SlurmTiming, t0: float = 0.0) -> ScoreRanking:
    """``ranking`` with ``priority_calc_period_s``'s age (:class:`CalcPeriodPriority`; its wakes at
    ``priority_epoch``, simulated 0 being epoch second ``t0``); unchanged without the switch."""
    if timing.priority_calc_period_s is None:
        return ranking
    phase = (timing.priority_epoch - t0) % timing.priority_calc_period_s
    return dataclasses.replace(ranking, scorer=CalcPeriodPriority(ranking.scorer, timing.priority_calc_period_s,
                                                                  phase))


def initial_idle_since(nodes: int, timing: SlurmTiming) -> np.ndarray:
    """The engine's ``idle_since`` at simulated time 0: every node idle for ``idle_at_start_s`` already."""
    return np.full(nodes, -timing.idle_at_start_s)


def config_clock(timing: SlurmTiming, t0: float) -> Callable[[np.ndarray], np.ndarray] | None:
    """The engine's ``ready_clock`` for ``config_tick_s``: a boot ending at simulated time r (seconds after the
    epoch ``t0``) lets its jobs start at the first time-limit check at or after r; None without the switch."""
    if timing.config_tick_s is None:
        return None
    return check_clock(timing.config_epoch, t0, timing.config_tick_s)


def check_clock(check_epoch: float, t0: float, period: float = PERIODIC_TIMEOUT_S) -> Callable:
    """Simulated time r (seconds after epoch ``t0``) -> the first of slurmctld's time-limit checks at or after
    r; the checks run every ``period`` seconds, one of them at epoch second ``check_epoch``."""
    phase = (check_epoch - t0) % period
    return lambda r: phase + np.ceil((np.asarray(r) - phase) / period) * period


def batch_passes(submit: np.ndarray, t0: float, start: float, delay_s: float = BATCH_SCHED_DELAY_S,
                 interval_s: float = SCHED_INTERVAL_S) -> np.ndarray:
    """When slurmctld's background loop runs the main scheduler for jobs submitted at ``submit`` (simulated
    seconds; simulated 0 is epoch second ``t0``): the simulated times of those passes, sorted, unique.

    The loop wakes on whole wall-clock seconds. Its full passes fall every ``interval_s`` from slurmctld's
    ``start``; between them a wake runs a pass if a job was submitted since the last pass and at least
    ``delay_s`` (whole seconds: time_t) have passed since the last pass of either kind (module docstring)."""
    subs = np.sort(np.asarray(submit, dtype=float)) + t0
    first = math.floor(start)
    last = -math.inf
    out: list[float] = []
    k = 0
    while k < len(subs):
        now = math.ceil(subs[k])  # the first wake that sees the submit
        full = first + math.floor((now - first) / interval_s) * interval_s  # the last full pass at or before
        since = max(last, full)
        if full != now and now - since < delay_s:
            now = min(since + delay_s, full + interval_s)
        last = now
        out.append(now - t0)
        while k < len(subs) and subs[k] <= now:
            k += 1
    return np.asarray(out)


def power_scan_due(now: int, last_scan: float, last_change: float,
                   interval_s: float = POWER_SAVE_INTERVAL_S, min_interval_s: float = 0.0,
                   strict: bool = False) -> bool:
    """Whether slurmctld's power thread, waking at whole second ``now``, scans the nodes: at least
    ``min_interval_s`` (power_save_min_interval) after its last scan ``last_scan``, and either a node changed
    state at or after that scan (``last_change``, whole seconds: ``last_node_update``) or ``interval_s``
    (power_save_interval) has passed (power_save.c ``_power_save_thread``; module docstring). Slurm 22.05.8
    compares with >=; 24.11.5 with > (``strict``): a change in the second of the last scan does not count,
    and the quiet interval is ``interval_s`` + 1 whole seconds."""
    if strict:
        return now > last_scan + min_interval_s and (last_change > last_scan or now > last_scan + interval_s)
    return now >= last_scan + min_interval_s and (last_change >= last_scan or now >= last_scan + interval_s)


def suspend_due(last_busy: np.ndarray, now: int, suspend_time_s: float) -> np.ndarray:
    """Which idle nodes a scan at whole second ``now`` suspends: those whose ``last_busy`` (epoch seconds,
    truncated to whole seconds as slurmctld keeps them) is before ``now - SuspendTime`` (power_save.c
    ``_do_power_work``)."""
    return np.floor(np.asarray(last_busy, dtype=float)) < now - suspend_time_s


def shutdown_done(requested: np.ndarray, now: int, suspend_timeout_s: float) -> np.ndarray:
    """Which nodes powering down a scan at whole second ``now`` marks powered down: those whose suspend
    request (epoch seconds) plus SuspendTimeout is before ``now`` (power_save.c ``_do_power_work``)."""
    return np.floor(np.asarray(requested, dtype=float)) + suspend_timeout_s < now
