"""One cycle's decision, as a pure function of the snapshot, the site and what the last cycle remembered.

Order: rank (priority bands as SiteFactor) -> pack (move flexible pending jobs, using those bands) ->
reshape (partitions by calendar) -> power (nodes up/down). Each step's actions carry their own reasons; a step
that is switched off contributes nothing. A last guard (:func:`one_power_action_per_node`) makes sure no node
gets two power actions in one cycle (never POWER_UP and POWER_DOWN together).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..decision import Decision, MoveJob, PowerNodes, SetSiteFactor
from ..pack.plan import plan_moves
from ..scale.planner import ScaleConfig, ScaleMemory, plan_power
from ..scale.reshape import plan_reshape
from ..snapshot import Snapshot
from .inputs import group_states, packing_jobs

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site import Site

log = logging.getLogger(__name__)
BANDS = 8
# A ranker: (snapshot, site, now) -> Decision of SetSiteFactor actions (e.g. the DQN's live ranker).
Ranker = Callable[[Snapshot, "Site", float], Decision]


@dataclass(frozen=True)
class CycleConfig:
    pack: bool = True
    reshape: bool = True
    power: bool = True
    pack_time_cap_s: float = 1.0
    scale: ScaleConfig = field(default_factory=ScaleConfig)


@dataclass(frozen=True)
class CycleMemory:
    scale: ScaleMemory = field(default_factory=ScaleMemory)


def bands_from(decision: Decision) -> dict[int, int]:
    """Job id -> packing band 0..7 (7 most urgent) from the ranker's SiteFactor actions: the rank of the job's
    value among the distinct values set, spread evenly over the bands (lowest 0, highest 7)."""
    acts = [a for a in decision.actions if isinstance(a, SetSiteFactor)]
    values = sorted({a.site_factor for a in acts})
    top = max(len(values) - 1, 1)
    band = {v: round((BANDS - 1) * i / top) if len(values) > 1 else BANDS - 1 for i, v in enumerate(values)}
    return {j: band[a.site_factor] for a in acts for j in a.job_ids}


def pack_moves(snapshot: Snapshot, site: Site, bands: dict[int, int], time_cap_s: float) -> Decision:
    """MoveJob actions for flexible pending jobs (none for pinned ones, none when nothing is pending)."""
    moves, result = plan_moves(packing_jobs(snapshot, site, bands), site, group_states(snapshot, site), time_cap_s)
    if result is None:
        return Decision((), "pack")
    log.info("pack: %s objective %.1f (greedy %.1f) gap %.2f%% in %.3f s", result.status.value, result.objective,
             result.greedy_objective, 100 * (result.gap or 0), result.build_s + result.solve_s)
    return Decision(tuple(MoveJob(int(m.job_id), m.partition, "&".join(m.features),
                                  f"pack ({result.status.value}, gap {100 * (result.gap or 0):.1f}%): {m.reason}")
                          for m in moves), "pack")


def one_power_action_per_node(decision: Decision) -> Decision:
    """``decision`` with at most one power action per node: the first one stands (remediation comes before
    the groups' plans); a later one loses that node, and an action left without nodes is dropped (logged)."""
    claimed: dict[str, str] = {}
    kept = []
    for action in decision.actions:
        if isinstance(action, PowerNodes):
            clash = [n for n in action.nodes if n in claimed]
            if clash:
                log.warning("guard: %s of %s dropped: already %s this cycle", action.action, ",".join(clash),
                            "/".join(sorted({claimed[n] for n in clash})))
                action = replace(action, nodes=tuple(n for n in action.nodes if n not in claimed))
                if not action.nodes:
                    continue
            claimed.update((n, action.action) for n in action.nodes)
        kept.append(action)
    return Decision(tuple(kept), decision.source)


def decide(snapshot: Snapshot, site: Site, config: CycleConfig, memory: CycleMemory, now: float,
           ranker: Ranker | None = None) -> tuple[Decision, CycleMemory]:
    """Everything this cycle does, and what the next cycle must remember."""
    ranked = ranker(snapshot, site, now) if ranker else Decision((), "rank:off")
    decision = ranked
    if config.pack:
        decision += pack_moves(snapshot, site, bands_from(ranked), config.pack_time_cap_s)
    if config.reshape:
        decision += plan_reshape(snapshot, site, dt.datetime.fromtimestamp(now, dt.timezone.utc))
    scale_memory = memory.scale
    if config.power:
        power, scale_memory = plan_power(snapshot, site, config.scale, memory.scale, now)
        decision += power
    return one_power_action_per_node(decision), CycleMemory(scale_memory)
