"""Runs cycles against a live cluster: collect a snapshot, decide, apply, remember.

The caller holds the state directory's lock (``hetsched cycle`` does, see ``cli/common.one_writer``): one
writer of the scale memory, the cycle state and the journal.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..decision import Journal, SlurmApplier
from ..gcpause import gc_paused
from ..deploy.wipe import MEMORY_FILE as WIPE_FILE
from ..deploy.wipe import applied_wipe_memory, load_wipe_memory, save_wipe_memory
from ..scale.memory_store import load_memory, save_memory
from ..slurm import SlurmClient
from ..snapshot import collect_snapshot
from ..snapshot.shared import QueueFile
from .decide import CycleConfig, CycleMemory, Ranker, decide
from .guard_memory import load_guard_memory, save_guard_memory
from .site_factors import applied_site_factors, load_deferred, load_site_factors, save_deferred, save_site_factors
from .metrics import CycleMetrics
from .state import CycleState, backoff_s, load_cycle_state, save_cycle_state

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site
    from .active import ActivePolicy

log = logging.getLogger(__name__)
MAX_BACKOFF_S = 600.0


class CycleRunner:
    """``run_once()`` is one cycle; ``dry_run`` decides and journals nothing to Slurm (shadow mode)."""

    def __init__(self, site: Site, client: SlurmClient, config: CycleConfig, state_dir: Path,
                 ranker: Ranker | None = None, dry_run: bool = False, active: ActivePolicy | None = None,
                 metrics: CycleMetrics | None = None, queue_file: QueueFile | None = None):
        self.site, self.client, self.config, self.ranker, self.dry_run = site, client, config, ranker, dry_run
        self.metrics = metrics or CycleMetrics()  # served by 'cycle run' when asked
        self.active = active  # a policy file re-read each cycle (config and ranker then follow it)
        self.state_dir = Path(state_dir)
        self.memory_file = self.state_dir / "scale-memory.json"
        self.guard_file = self.state_dir / "guard-state.json"
        self.site_factor_file = self.state_dir / "site-factors.json"
        self.state_file = self.state_dir / "cycle-state.json"
        self.deferred_file = self.state_dir / "deferred-jobs.json"  # jobs the last apply budget left over
        self.wipe_file = self.state_dir / WIPE_FILE
        self.applier = SlurmApplier(client, Journal(self.state_dir / "journal.jsonl"), dry_run=dry_run)
        self.state = load_cycle_state(self.state_file)
        self.queue_file = queue_file  # the queue each cycle reads is published here for the daemon (snapshot/shared.py)

    def run_once(self, now: float | None = None):
        """One cycle; returns the decision and one result per action. Any error propagates to the caller after
        it is counted in the cycle state (a dry run leaves every state file alone)."""
        t0 = time.perf_counter()
        try:
            if self.active is not None:
                self.config, self.ranker = self.active.refresh()
            with gc_paused():  # allocation-heavy: the collector's full passes over 100k jobs grow faster than them
                snapshot = collect_snapshot(self.client)
                self._publish(snapshot)
            t_read = time.perf_counter()
            site_factors = load_site_factors(self.site_factor_file)
            memory = CycleMemory(load_memory(self.memory_file), load_guard_memory(self.guard_file), site_factors,
                                 load_wipe_memory(self.wipe_file))
            before = memory
            with gc_paused():
                decision, memory = decide(snapshot, self.site, self.config, memory, now or time.time(), self.ranker)
            t_apply = time.perf_counter()
            budget = self.config.budget.apply_budget(t_apply - t0) if self.config.budget is not None else None
            carried = load_deferred(self.deferred_file) if budget is not None else set()
            inputs = self._inputs(snapshot, decision)
            if budget is not None:
                inputs["apply_budget_s"] = round(budget, 3)
            results = self.applier.apply(decision, inputs, budget, carried)
            apply_s = time.perf_counter() - t_apply
            skipped = sum(not r.attempted for r in results)
            if not self.dry_run and not skipped and (carried or any(r.deferred_ids for r in results)):
                save_deferred(self.deferred_file, {j for r in results for j in r.deferred_ids})
            if not self.dry_run and not skipped:  # an aborted apply: the next cycle decides again from Slurm
                save_memory(self.memory_file, memory.scale)
                if self.config.guard is not None:
                    save_guard_memory(self.guard_file, memory.guard)
                save_site_factors(self.site_factor_file, applied_site_factors(memory.site_factors, results),
                                  site_factors)
                wipe = applied_wipe_memory(before.wipe, memory.wipe, results)
                if wipe != before.wipe:
                    save_wipe_memory(self.wipe_file, wipe)
        except Exception as err:
            self._remember(lambda s: s.failed(f"{type(err).__name__}: {err}"))
            self.metrics.cycle_failed(self.state.consecutive_failures)
            raise
        if skipped:
            self._remember(lambda s: s.failed(f"slurmctld unreachable: {skipped} action(s) not attempted"))
        else:
            self._remember(lambda s: s.succeeded(time.time()))
        self.metrics.cycle_done(decision, None if self.dry_run else results, apply_s, time.time(),
                                self.state.consecutive_failures)
        log.info("cycle: %d action(s) (%s) in %.3f s (steps: %s)", len(decision.actions), decision.source,
                 time.perf_counter() - t0, ", ".join(f"{name} {took:.3f} s" for name, took in decision.timings))
        deferred = sum(len(r.deferred_ids) for r in results)
        log.info("cycle phases: read %.3f s, decide %.3f s, apply %.3f s%s", t_read - t0, t_apply - t_read, apply_s,
                 f" ({deferred} job update(s) deferred to the next cycle)" if deferred else "")
        return decision, results

    def _publish(self, snapshot) -> None:
        """Hand the queue just read to the daemon (:mod:`..snapshot.shared`); a failure costs the daemon a read of
        its own, never this cycle."""
        if self.queue_file is None:
            return
        try:
            self.queue_file.publish((*snapshot.jobs, *snapshot.finished), snapshot.jobs_taken_at or snapshot.taken_at)
        except OSError as err:
            log.warning("could not publish the queue to %s: %s", self.queue_file.path, err)

    def _inputs(self, snapshot, decision) -> dict:
        """What this cycle's decisions were made from, journaled with each action (``hetsched decisions``)."""
        return {"cycle": self.state.cycles + 1, "snapshot_t": round(snapshot.taken_at, 3), "source": decision.source,
                "policy": str(self.active.path) if self.active is not None else None,
                "pending_jobs": sum(1 for j in snapshot.jobs if j.pending), "nodes": len(snapshot.nodes),
                "steps_s": {name: round(took, 4) for name, took in decision.timings}}

    def _remember(self, update) -> None:
        self.state = update(self.state)
        if not self.dry_run:
            try:
                save_cycle_state(self.state_file, self.state)
            except OSError as err:  # a full disk must not turn a good cycle into a failed one
                log.error("cannot save %s: %s", self.state_file, err)

    def run_forever(self, stop: threading.Event, interval: float, max_backoff: float = MAX_BACKOFF_S) -> CycleState:
        """Cycles until ``stop`` is set. A cycle that raises anything is logged with its traceback and counted,
        and the next one waits twice as long as the last (at most ``max_backoff`` s); a success resets it."""
        while not stop.is_set():
            try:
                self.run_once()
            except Exception:
                log.exception("cycle failed (%d in a row, %d in all)", self.state.consecutive_failures,
                              self.state.failures)
            stop.wait(backoff_s(interval, self.state.consecutive_failures, max_backoff))
        return self.state
