"""Runs cycles against a live cluster: collect a snapshot, decide, apply, remember."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..decision import Journal, SlurmApplier
from ..scale.memory_store import load_memory, save_memory
from ..slurm import SlurmClient
from ..snapshot import collect_snapshot
from .decide import CycleConfig, CycleMemory, Ranker, decide

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site

log = logging.getLogger(__name__)


class CycleRunner:
    """``run_once()`` is one cycle; ``dry_run`` decides and journals nothing to Slurm (shadow mode)."""

    def __init__(self, site: Site, client: SlurmClient, config: CycleConfig, state_dir: Path,
                 ranker: Ranker | None = None, dry_run: bool = False):
        self.site, self.client, self.config, self.ranker = site, client, config, ranker
        self.state_dir = Path(state_dir)
        self.memory_file = self.state_dir / "scale-memory.json"
        self.applier = SlurmApplier(client, Journal(self.state_dir / "journal.jsonl"), dry_run=dry_run)

    def run_once(self, now: float | None = None):
        """One cycle; returns the applied results (empty in dry-run). Slurm errors propagate to the caller."""
        t0 = time.perf_counter()
        snapshot = collect_snapshot(self.client)
        memory = CycleMemory(load_memory(self.memory_file))
        decision, memory = decide(snapshot, self.site, self.config, memory, now or time.time(), self.ranker)
        results = self.applier.apply(decision)
        save_memory(self.memory_file, memory.scale)
        log.info("cycle: %d action(s) (%s) in %.3f s", len(decision.actions), decision.source,
                 time.perf_counter() - t0)
        return decision, results
