"""The pool as the suite sees it in one snapshot: nodes per site node group and power state, pending jobs per
class and tier. Pure functions of (site, snapshot), memoized in the snapshot under a key naming the site's
content (:func:`site_key`), so the daemon's snapshot worker computes them (:func:`prepare_pool`) and the memo
travels back with the pickled snapshot: a scrape then formats numbers only, and the daemon's own process (the
submit path's GIL) never pays for them. Used by ``hetsched status`` and the daemon's pool metrics (labels: the
site's own group, class and tier names - bounded).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter

from ..admission import JobRequest, classify
from ..scale.power_state import observed
from ..site import Site, load_site
from ..snapshot import Snapshot

_SITE_KEYS: dict[int, tuple[Site, str]] = {}  # id -> (the site, kept alive so its id stays its own; its key)
_CLASSES: dict[tuple, tuple[str, str]] = {}  # (site key, owner fields) -> (class, tier): classify is pure
_MAX_CLASSES = 65536


def site_key(site: Site) -> str:
    """A digest of the site's content: the same in every process that loaded the same file."""
    known = _SITE_KEYS.get(id(site))
    if known is None or known[0] is not site:
        if len(_SITE_KEYS) > 64:
            _SITE_KEYS.clear()
        known = _SITE_KEYS[id(site)] = (site, hashlib.sha1(site.model_dump_json().encode()).hexdigest()[:16])
    return known[1]


def prepare_pool(site_path: str, snap: Snapshot) -> Snapshot:
    """Compute the pool summary of ``snap`` into its memo (in the snapshot worker; picklable with
    ``functools.partial`` over ``site_path``); returns ``snap`` without its ``jobs`` and ``finished``, the memo
    kept. Admission reads nodes and partitions only and the summary is in the memo, while unpickling the job
    lists in the daemon held its GIL (and so the submit path) 0.19 CPU s per refresh at 10,000 pending jobs and
    2.2 s at 100,000 (large.yaml, synthetic queue; the worker sends a snapshot every ``refresh_s``)."""
    site = _worker_site(site_path)
    node_groups(site, snap)
    pending_groups(site, snap)
    sla_attainment(site, snap)
    drained_faults(snap)
    return snap.without_jobs()


def _jobs_of(snap: Snapshot) -> tuple:
    """``snap``'s jobs and finished jobs, for a summary computed here; a snapshot sent without them (by
    :func:`prepare_pool`) must have its summaries in its memo (else they were computed for another site)."""
    if snap.jobs_left_out:
        raise RuntimeError("pool summary of a snapshot sent without its jobs is not in its memo: "
                           "the daemon's site differs from the snapshot worker's")
    return (*snap.jobs, *snap.finished)


@functools.lru_cache(maxsize=4)
def _worker_site(site_path: str) -> Site:
    return load_site(site_path)


def node_groups(site: Site, snap: Snapshot) -> list[dict]:
    """Per site node group: its node count and how many are in each power state (once per snapshot)."""
    return snap.memo(("pool.groups", site_key(site)), lambda: _node_groups(site, snap))


@functools.lru_cache(maxsize=1024)
def _power_of(state: str, flags: tuple[str, ...], powered_down: bool) -> str:
    """A node's column in :func:`node_groups` from its state and flags (few distinct ones: cached)."""
    if "DRAIN" in state.upper() or any(f.lower() == "drain" for f in flags):
        return "drained"
    if "DOWN" in state.upper().split("+") and not powered_down:
        return "down"
    return observed(" ".join((state, *flags))).value


def _node_groups(site: Site, snap: Snapshot) -> list[dict]:
    """Per site node group: its node count, how many are in each power state (``missing``: not in Slurm,
    ``unknown``: Slurm did not answer), the estimated draw ``watts`` (the site's power model, as the simulator
    counts it: a powered node idle_w + (busy_w - idle_w) x its share of allocated cores, one booting or
    shutting down idle_w, one off off_w; missing/unknown nodes none) and ``cost_per_hour`` of the powered ones."""
    rows = []
    for group in site.node_groups:
        states: Counter[str] = Counter()
        if not snap.known:
            states["unknown"] = group.count
        draw, busy, powered = group.power, 0.0, 0
        for host in group.hostnames if snap.known else ():
            node = snap.node(host)
            column = "missing" if node is None else _power_of(node.state, node.flags, node.powered_down)
            states[column] += 1
            if node is not None and column != "off" and node.cpus:
                busy += min(node.alloc_cpus / node.cpus, 1.0)
        for column, count in states.items():
            if column not in ("off", "missing", "unknown"):
                powered += count
        watts = powered * draw.idle_w + busy * (draw.busy_w - draw.idle_w) + states.get("off", 0) * draw.off_w
        rows.append({"group": group.name, "nodes": group.count, "power": dict(sorted(states.items())),
                     "watts": round(watts, 1), "cost_per_hour": round(powered * group.cost_per_hour, 4)})
    return rows


def pending_groups(site: Site, snap: Snapshot) -> dict[tuple[str, str], tuple[int, float | None]]:
    """(class, tier) -> (pending jobs, oldest submit time) as admission classifies them ("-": none);
    computed once per snapshot (one :func:`classify` per distinct owner/qos/comment/wckey/account)."""
    return snap.memo(("pool.pending", site_key(site)), lambda: _pending_groups(site, snap))


def _pending_groups(site: Site, snap: Snapshot) -> dict[tuple[str, str], tuple[int, float | None]]:
    # per distinct owner fields first (a few hundred), then classified once each (cached across snapshots)
    owners: dict[tuple, list] = {}
    for job in _jobs_of(snap):
        if job.pending:
            key = (job.qos, job.comment, job.wckey, job.account, job.user_id)
            seen = owners.get(key)
            if seen is None:
                owners[key] = [1, job.submit_time or None]
            else:
                seen[0] += 1
                if job.submit_time and (seen[1] is None or job.submit_time < seen[1]):
                    seen[1] = job.submit_time
    skey = site_key(site)
    groups: dict[tuple[str, str], tuple[int, float | None]] = {}
    for key, (count, first) in owners.items():
        label = _owner_class(site, skey, key)
        had, oldest = groups.get(label, (0, None))
        groups[label] = (had + count, first if oldest is None or (first is not None and first < oldest) else oldest)
    return dict(sorted(groups.items()))


def _owner_class(site: Site, skey: str, key: tuple) -> tuple[str, str]:
    """(class, tier) admission gives a job of these owner fields (qos, comment, wckey, account, uid)."""
    label = _CLASSES.get((skey, key))
    if label is None:
        qos, comment, wckey, account, uid = key
        c = classify(JobRequest(qos=qos or None, comment=comment or None, wckey=wckey or None,
                                account=account or None, user_id=uid), site)
        label = (c.workload_class.name if c.workload_class else "-", c.tier.name if c.tier else "-")
        if len(_CLASSES) >= _MAX_CLASSES:
            _CLASSES.clear()
        _CLASSES[(skey, key)] = label
    return label


def pending_queue(site: Site, snap: Snapshot, now: float) -> list[dict]:
    """Pending jobs per (class, tier) as admission classifies them, with the oldest wait in seconds."""
    return [{"class": wclass, "tier": tier, "pending": count,
             "oldest_wait_s": round(max(now - oldest, 0.0)) if oldest else 0}
            for (wclass, tier), (count, oldest) in pending_groups(site, snap).items()]


def sla_attainment(site: Site, snap: Snapshot) -> list[dict]:
    """Per QoS tier with a ``max_wait``: the share of its jobs Slurm still remembers (pending, running, ended
    after starting) that started within it, as ``hetsched sla report`` counts them (a job pending for less is
    not decided yet, one pending for longer has missed), at the snapshot's time; and the tier's target. Tiers
    without decided jobs are left out. Once per snapshot."""
    return snap.memo(("pool.sla", site_key(site)), lambda: _sla_attainment(site, snap))


def _sla_attainment(site: Site, snap: Snapshot) -> list[dict]:
    from ..sla.report import sla_rows
    from ..workload.slurmdbd import JobWait

    jobs = [JobWait(str(j.job_id), j.qos, float(j.submit_time),
                    float(j.start_time - j.submit_time) if j.start_time else None, j.state)
            for j in _jobs_of(snap) if j.submit_time and (j.start_time or j.pending)]
    return [{"tier": r.tier, "attainment": r.attainment_pct / 100.0, "target": r.target_pct / 100.0,
             "decided": r.decided}
            for r in sla_rows(jobs, site.policy.qos_tiers, snap.taken_at)
            if r.target_pct is not None and r.attainment_pct is not None]


_FAULT = re.compile(r"^hetsched: health .*?: ([a-z0-9_]+) \(")


def drained_faults(snap: Snapshot) -> dict[str, int]:
    """Drained nodes by the fault class their reason names: the health check's drains (``hetsched: health
    ...: CLASS (action) [signature]``) by class, any other drain as ``other``. Once per snapshot."""
    return snap.memo(("pool.faults",), lambda: _drained_faults(snap))


def _drained_faults(snap: Snapshot) -> dict[str, int]:
    out: Counter[str] = Counter()
    for node in snap.nodes:
        if _power_of(node.state, node.flags, node.powered_down) == "drained":
            m = _FAULT.match(node.reason or "")
            out[m.group(1) if m else "other"] += 1
    return dict(sorted(out.items()))
