"""The admission daemon's Prometheus metrics (``prometheus_client``), served over HTTP and/or a textfile.

Served and written by :class:`slurm_plugin.metrics.Exposition`. Contract: the submit path only increments
counters and observes one histogram (no lock of ours, no I/O); gauges that cost something (snapshot age, open
connections) are computed when scraped. Every label set is bounded: ``decision`` in :data:`DECISIONS`, ``kind`` in the admission kinds, ``reason`` in :data:`BAD_REQUESTS`
or the admission's refusal causes (never a job id, user or free text). The registry is per instance, so tests
and several daemons in one process never share series.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ..metrics import DEFAULT_LISTEN, Exposition, metrics_url, parse_listen
from ..site import Site
from ..snapshot import Snapshot
from .pool import drained_faults, node_groups, pending_groups, sla_attainment


DECISIONS = ("accept", "modify", "reject", "error")  # modify: accepted with job_desc changes
# Requests answered with an error line before any decision; see server.py for where each is counted.
BAD_REQUESTS = ("malformed", "unauthorised", "busy", "too_large", "timeout", "internal")
# Seconds; the shim's own timeout is 50 ms, so the buckets are dense below it.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5)


def accelerator_of(group) -> str:
    """A site node group's accelerator type for labels: its GPU type, else its first accelerator's, else none."""
    if group.gpu is not None:
        return group.gpu.type
    return group.accelerators[0].type if group.accelerators else "none"


class PoolCollector:
    """Pool gauges from ``source()`` = (site, snapshot), memoized per snapshot (daemon/pool.py): nodes per site
    group and power state, estimated draw, cost per hour and energy per group, pending jobs and the oldest wait
    per class and tier. Energy is the draw of each snapshot a scrape saw, held until the next one it saw (so
    it is as fine as the scrapes; a group's counter starts at the first scrape)."""

    def __init__(self, source: Callable[[], tuple[Site, Snapshot]]):
        self.source = source
        self._lock = threading.Lock()
        self._energy: dict[str, float] = {}  # group -> joules so far
        self._last: tuple[Snapshot, dict[str, float]] | None = None  # the last snapshot scraped, its watts

    def _energy_until(self, snap: Snapshot, watts: dict[str, float]) -> dict[str, float]:
        with self._lock:
            last = self._last
            if last is not None and last[0] is not snap and snap.taken_at > last[0].taken_at:
                for group, w in last[1].items():
                    self._energy[group] = self._energy.get(group, 0.0) + w * (snap.taken_at - last[0].taken_at)
            if last is None or snap.taken_at >= last[0].taken_at:
                self._last = (snap, watts)
            for group in watts:
                self._energy.setdefault(group, 0.0)
            return dict(self._energy)

    def describe(self) -> list:
        return []  # nothing to compute at registration

    def collect(self) -> Iterator[GaugeMetricFamily]:
        site, snap = self.source()
        nodes = GaugeMetricFamily("hetsched_pool_nodes", "Nodes per site node group and power state (missing: "
                                  "not in Slurm, unknown: no snapshot yet).", labels=["group", "power"])
        watts = GaugeMetricFamily("hetsched_pool_power_watts", "Estimated draw per site node group (the site's "
                                  "power model over the nodes' power states and allocated cores).", labels=["group"])
        cost = GaugeMetricFamily("hetsched_pool_cost_per_hour", "cost_per_hour of the powered nodes per group.",
                                 labels=["group"])
        energy = CounterMetricFamily("hetsched_pool_energy_joules", "Estimated energy per group since the "
                                     "daemon started (each scraped snapshot's draw until the next).", labels=["group"])
        info = GaugeMetricFamily("hetsched_pool_group_info", "1 per site node group with its architecture and "
                                 "accelerator type ('none': CPU only), to group the pool's series by them.",
                                 labels=["group", "arch", "accelerator"])
        for group in site.node_groups:
            info.add_metric([group.name, group.cpu.arch, accelerator_of(group)], 1)
        rows = node_groups(site, snap)
        for row in rows:
            for state, count in row["power"].items():
                nodes.add_metric([row["group"], state], count)
            watts.add_metric([row["group"]], row["watts"])
            cost.add_metric([row["group"]], row["cost_per_hour"])
        if snap.known:
            for group, joules in self._energy_until(snap, {r["group"]: r["watts"] for r in rows}).items():
                energy.add_metric([group], joules)
        yield from (info, watts, cost, energy)
        pending = GaugeMetricFamily("hetsched_pool_pending_jobs", "Pending jobs per workload class and QoS tier.",
                                    labels=["class", "tier"])
        oldest = GaugeMetricFamily("hetsched_pool_oldest_wait_seconds",
                                   "Wait of the oldest pending job per workload class and QoS tier.",
                                   labels=["class", "tier"])
        now = time.time()
        for labels, (count, first) in pending_groups(site, snap).items():
            pending.add_metric(list(labels), count)
            oldest.add_metric(list(labels), max(now - first, 0.0) if first else 0.0)
        sla = GaugeMetricFamily("hetsched_pool_sla_attainment_ratio", "Share of a QoS tier's decided jobs that "
                                "started within its max_wait (hetsched sla report's rule, over the jobs in the "
                                "snapshot).", labels=["tier"])
        target = GaugeMetricFamily("hetsched_pool_sla_target_ratio", "A QoS tier's target share (target_pct).",
                                   labels=["tier"])
        for row in sla_attainment(site, snap):
            sla.add_metric([row["tier"]], row["attainment"])
            target.add_metric([row["tier"]], row["target"])
        faults = GaugeMetricFamily("hetsched_pool_drained_nodes", "Drained nodes by the fault class the health "
                                   "check's reason names ('other': drained for another reason).",
                                   labels=["fault_class"])
        for fault, count in drained_faults(snap).items():
            faults.add_metric([fault], count)
        yield from (nodes, pending, oldest, sla, target, faults)


__all__ = ["DEFAULT_LISTEN", "AdmissionMetrics", "PoolCollector", "metrics_url", "parse_listen"]


class AdmissionMetrics(Exposition):
    """The submit path's series in their own registry. ``snapshot_age`` and ``open_connections`` are called
    at scrape time (they must be cheap and thread-safe: a read of an attribute); ``pool`` adds the pool
    gauges of :class:`PoolCollector`."""

    def __init__(self, snapshot_age: Callable[[], float] = lambda: float("nan"),
                 open_connections: Callable[[], float] = lambda: 0.0,
                 pool: Callable[[], tuple[Site, Snapshot]] | None = None):
        super().__init__()
        reg = self.registry
        self.requests = Counter("hetsched_admission_requests", "Submit/modify requests answered, by decision.",
                                ["decision"], registry=reg)
        self.kinds = Counter("hetsched_admission_decision_kinds",
                             "What accepted requests had decided (arch, accel, class, rightsize).",
                             ["kind"], registry=reg)
        self.refusals = Counter("hetsched_admission_refusals", "Requests refused, by cause.", ["reason"],
                                registry=reg)
        self.bad = Counter("hetsched_admission_bad_requests",
                           "Requests or connections answered with an error line, by reason.", ["reason"], registry=reg)
        self.unanswered = Counter("hetsched_shim_unanswered",
                                  "Calls the shim answered without the daemon (fail-open/closed), as it reports "
                                  "them on its next answered call (lost if slurmctld restarts first).",
                                  registry=reg)
        self.unknown_fields = Counter("hetsched_admission_unknown_fields",
                                      "Request keys ignored as unknown to this daemon (sent by a newer shim).",
                                      registry=reg)
        self.latency = Histogram("hetsched_admission_request_seconds",
                                 "Time from a complete request line to its reply (in the daemon).",
                                 buckets=LATENCY_BUCKETS, registry=reg)
        Gauge("hetsched_admission_snapshot_age_seconds", "Age of the snapshot decisions are made on.",
              registry=reg).set_function(snapshot_age)
        Gauge("hetsched_admission_open_connections", "Connections open to the daemon.",
              registry=reg).set_function(open_connections)
        if pool is not None:
            reg.register(PoolCollector(pool))
        # children made once: the hot path skips labels()' dict lookup + lock
        self._decision = {d: self.requests.labels(d) for d in DECISIONS}
        self._bad = {r: self.bad.labels(r) for r in BAD_REQUESTS}
        self.observe = self.latency.observe

    # --- the submit path ---------------------------------------------------------------------------------
    def decided(self, action: str, changed: bool, kinds: tuple[str, ...], cause: str = "") -> None:
        """Count one decision (``action`` accept/reject; ``changed``: accepted with changes)."""
        if action == "reject":
            self._decision["reject"].inc()
            self.refusals.labels(cause or "other").inc()
            return
        self._decision["modify" if changed else "accept"].inc()
        for kind in kinds:
            self.kinds.labels(kind).inc()

    def failed(self, reason: str) -> None:
        """Count one error reply; ``reason`` in :data:`BAD_REQUESTS` (malformed/internal also count as
        ``requests{decision="error"}``: they were requests)."""
        self._bad[reason].inc()
        if reason in ("malformed", "internal", "too_large", "timeout"):
            self._decision["error"].inc()
