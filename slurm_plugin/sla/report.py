"""The SLA report's rows, from jobs and their waits (pure: jobs and tiers in, rows out).

Per tier (a job's tier is its Slurm QOS): a started job met the SLA when its wait (Start - Submit) is at most
the tier's ``max_wait``; a job still pending longer than ``max_wait`` has already missed it; a job pending for
less is not decided yet and a job that ended without starting (cancelled while pending) is left out. The
attainment is met / decided, compared with ``target_pct``. Wait percentiles are over the started jobs
(nearest rank). QOS that are not tiers of the site get a row without a target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from ..workload.sacct import parse_timelimit

if TYPE_CHECKING:
    from ..site.schema import QosTier
    from ..workload.slurmdbd import JobWait

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class TierRow:
    tier: str
    target_pct: float | None
    max_wait_s: float | None
    jobs: int  # submitted in the window with this QOS
    decided: int  # started, or pending past max_wait
    met: int
    pending_late: int  # still pending, already past max_wait (counted as missed)
    attainment_pct: float | None  # met / decided
    wait_p50_s: float | None
    wait_p90_s: float | None
    wait_p99_s: float | None
    wait_max_s: float | None
    verdict: str  # met, missed, no target, no jobs

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of an ascending list (None if empty)."""
    if not sorted_values:
        return None
    return sorted_values[max(0, math.ceil(p / 100 * len(sorted_values)) - 1)]


def _row(name: str, tier: QosTier | None, jobs: list[JobWait], now: float) -> TierRow:
    limit = parse_timelimit(tier.max_wait) if tier is not None and tier.max_wait else None
    waits = sorted(j.wait_s for j in jobs if j.wait_s is not None)
    late = [j for j in jobs if j.wait_s is None and j.state == "PENDING" and limit is not None
            and now - j.submit > limit]
    met = sum(w <= limit for w in waits) if limit is not None else 0
    decided = len(waits) + len(late)
    attain = 100.0 * met / decided if decided and limit is not None else None
    verdict = ("no target" if limit is None or tier is None else "no jobs" if not decided else
               "met" if attain >= tier.target_pct else "missed")
    p50, p90, p99 = (percentile(waits, p) for p in PERCENTILES)
    return TierRow(name, tier.target_pct if tier else None, limit, len(jobs), decided, met, len(late), attain,
                   p50, p90, p99, waits[-1] if waits else None, verdict)


def sla_rows(jobs: Iterable[JobWait], tiers: Iterable[QosTier], now: float) -> list[TierRow]:
    """One row per tier (the site's order, highest priority first), then one per other QOS seen."""
    tiers = sorted(tiers, key=lambda t: -t.priority)
    by_qos: dict[str, list[JobWait]] = {}
    for j in jobs:
        by_qos.setdefault(j.qos, []).append(j)
    rows = [_row(t.name, t, by_qos.pop(t.name, []), now) for t in tiers]
    return rows + [_row(q or "(none)", None, js, now) for q, js in sorted(by_qos.items())]
