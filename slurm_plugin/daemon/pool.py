"""The pool as the suite sees it in one snapshot: nodes per site node group and power state, pending jobs per
class and tier. Pure functions of (site, snapshot), memoized in the snapshot; used by ``hetsched status`` and
the daemon's pool metrics (labels: the site's own group, class and tier names - bounded).
"""

from __future__ import annotations

from collections import Counter

from ..admission import JobRequest, classify
from ..scale.power_state import observed
from ..site import Site
from ..snapshot import Snapshot


def node_groups(site: Site, snap: Snapshot) -> list[dict]:
    """Per site node group: its node count and how many are in each power state (once per snapshot)."""
    return snap.memo(("pool.groups", id(site)), lambda: _node_groups(site, snap))


def _node_groups(site: Site, snap: Snapshot) -> list[dict]:
    """Per site node group: its node count and how many are in each power state (``missing``: not in Slurm,
    ``unknown``: Slurm did not answer)."""
    rows = []
    for group in site.node_groups:
        states: Counter[str] = Counter()
        if not snap.known:
            states["unknown"] = group.count
        for host in group.hostnames if snap.known else ():
            node = snap.node(host)
            if node is None:
                states["missing"] += 1
            elif "DRAIN" in node.state.upper() or any(f.lower() == "drain" for f in node.flags):
                states["drained"] += 1
            elif "DOWN" in node.state.upper().split("+") and not node.powered_down:
                states["down"] += 1
            else:
                states[observed(" ".join((node.state, *node.flags))).value] += 1
        rows.append({"group": group.name, "nodes": group.count, "power": dict(sorted(states.items()))})
    return rows


def pending_groups(site: Site, snap: Snapshot) -> dict[tuple[str, str], tuple[int, float | None]]:
    """(class, tier) -> (pending jobs, oldest submit time) as admission classifies them ("-": none);
    computed once per snapshot (one :func:`classify` per distinct owner/qos/comment/wckey/account)."""
    return snap.memo(("pool.pending", id(site)), lambda: _pending_groups(site, snap))


def _pending_groups(site: Site, snap: Snapshot) -> dict[tuple[str, str], tuple[int, float | None]]:
    groups: dict[tuple[str, str], tuple[int, float | None]] = {}
    memo: dict[tuple, tuple[str, str]] = {}
    for job in snap.jobs:
        if not job.pending:
            continue
        key = (job.qos, job.comment, job.wckey, job.account, job.user_id)
        if key not in memo:
            c = classify(JobRequest(qos=job.qos or None, comment=job.comment or None, wckey=job.wckey or None,
                                    account=job.account or None, user_id=job.user_id), site)
            memo[key] = (c.workload_class.name if c.workload_class else "-", c.tier.name if c.tier else "-")
        count, oldest = groups.get(memo[key], (0, None))
        if job.submit_time and (oldest is None or job.submit_time < oldest):
            oldest = job.submit_time
        groups[memo[key]] = (count + 1, oldest)
    return dict(sorted(groups.items()))


def pending_queue(site: Site, snap: Snapshot, now: float) -> list[dict]:
    """Pending jobs per (class, tier) as admission classifies them, with the oldest wait in seconds."""
    return [{"class": wclass, "tier": tier, "pending": count,
             "oldest_wait_s": round(max(now - oldest, 0.0)) if oldest else 0}
            for (wclass, tier), (count, oldest) in pending_groups(site, snap).items()]
