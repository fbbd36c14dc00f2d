"""The steering cycle's Prometheus metrics, served by ``hetsched cycle run`` (``--metrics-listen``, default
``127.0.0.1:9818``) and/or written as a textfile (``--metrics-textfile``).

Series (labels bounded: step names, action kinds, causes and statuses are code's own enums, the ranking source
one of the rankers' fixed names; never a job id or node name):
``hetsched_cycle_runs_total{outcome=ok|failed|aborted}`` (aborted: slurmctld stopped answering mid-apply),
``hetsched_cycle_step_seconds{step}`` (a histogram per step, ``apply`` included),
``hetsched_cycle_actions_total{kind,cause,status}`` (status ``ok|partial|deferred|failed|not-attempted|planned``,
planned: a dry run), ``hetsched_cycle_policy_rollbacks_total`` (the live guard's rollbacks applied),
``hetsched_cycle_last_success_timestamp_seconds``, ``hetsched_cycle_consecutive_failures`` and
``hetsched_cycle_ranking{source}`` (1 for the ranking the last cycle used, e.g. ``rank:dqn`` or
``rank:fallback-multifactor``, 0 for those used before), ``hetsched_cycle_pack_solves_total{status=optimal|
feasible|greedy|fallback}`` and ``hetsched_cycle_pack_gap`` (the packing solver's last relative gap).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from ..decision import Cause, Decision
from ..metrics import Exposition

DEFAULT_LISTEN = "127.0.0.1:9818"
OUTCOMES = ("ok", "failed", "aborted")
# Seconds: a step takes milliseconds (rank, reshape) to the packing cap (1 s by default) and beyond.
STEP_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class CycleMetrics(Exposition):
    """Counts what each cycle decided and what became of it; :meth:`cycle_done` / :meth:`cycle_failed` are
    called once per cycle by :class:`~slurm_plugin.cycle.runner.CycleRunner`."""

    def __init__(self) -> None:
        super().__init__()
        reg = self.registry
        self.runs = Counter("hetsched_cycle_runs", "Cycles run, by outcome (aborted: slurmctld stopped "
                            "answering while the decision was applied).", ["outcome"], registry=reg)
        self.steps = Histogram("hetsched_cycle_step_seconds", "Time per cycle step (apply: the applier).",
                               ["step"], buckets=STEP_BUCKETS, registry=reg)
        self.actions = Counter("hetsched_cycle_actions", "Actions decided, by kind, cause and what became of them.",
                               ["kind", "cause", "status"], registry=reg)
        self.rollbacks = Counter("hetsched_cycle_policy_rollbacks",
                                 "Policy rollbacks the live guard applied.", registry=reg)
        self.last_success = Gauge("hetsched_cycle_last_success_timestamp_seconds",
                                  "Unix time the last cycle succeeded.", registry=reg)
        self.failing = Gauge("hetsched_cycle_consecutive_failures", "Cycles failed in a row.", registry=reg)
        self.ranking = Gauge("hetsched_cycle_ranking", "1 for the ranking the last cycle used (its source), 0 for "
                             "others used before.", ["source"], registry=reg)
        self.pack_solves = Counter("hetsched_cycle_pack_solves", "Packing solves by how the result was obtained "
                                   "(optimal, feasible at the time cap, greedy, fallback to greedy).", ["status"],
                                   registry=reg)
        self.pack_gap = Gauge("hetsched_cycle_pack_gap", "Relative MIP gap of the last packing solve.", registry=reg)
        self._sources: set[str] = set()
        for outcome in OUTCOMES:
            self.runs.labels(outcome)

    def cycle_done(self, decision: Decision, results: list | None, apply_s: float, now: float,
                   consecutive_failures: int = 0) -> None:
        """One cycle that decided: ``results`` the applier's (None or planned-only in a dry run)."""
        for step, took in decision.timings:
            self.steps.labels(step).observe(took)
        self.steps.labels("apply").observe(apply_s)
        statuses = [r.status for r in results] if results else ["planned"] * len(decision.actions)
        for action, status in zip(decision.actions, statuses):
            cause = action.cause.value if isinstance(action.cause, Cause) else "none"
            self.actions.labels(action.kind, cause, status).inc()
            if action.cause is Cause.POLICY_ROLLBACK and status == "ok":
                self.rollbacks.inc()
        notes = dict(decision.notes)
        if "pack.status" in notes:
            self.pack_solves.labels(str(notes["pack.status"])).inc()
            self.pack_gap.set(float(notes.get("pack.gap", 0.0)))
        aborted = "not-attempted" in statuses
        self.runs.labels("aborted" if aborted else "ok").inc()
        if not aborted:
            self.last_success.set(now)
        self.failing.set(consecutive_failures)
        source = next((part for part in decision.source.split("+") if part.startswith("rank")), None)
        if source is not None:
            self._sources.add(source)
            for seen in self._sources:
                self.ranking.labels(seen).set(1 if seen == source else 0)

    def cycle_failed(self, consecutive_failures: int) -> None:
        """One cycle that raised before it could apply."""
        self.runs.labels("failed").inc()
        self.failing.set(consecutive_failures)
