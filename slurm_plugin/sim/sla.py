"""SLA attainment of a simulated run, by the rule of ``hetsched sla report`` (:func:`.report.sla_rows`).

A simulated job's tier: its workload class's ``qos`` (``JobTable.class_names[wclass]``; a class named like a
tier is that tier), else the tier whose ``priority`` equals the job's ``qos_priority`` (synthetic workloads
carry it), else the default class's tier (as Slurm gives a job with no ``--qos`` its account's default QOS),
else the lowest tier. A job the run never started is pending at the run's end (the last event): late if it
had waited past ``max_wait`` by then, undecided otherwise, exactly as a live pending job. Pure: arrays in, rows
out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..sla.report import TierRow, sla_rows
from ..workload.slurmdbd import JobWait

if TYPE_CHECKING:
    from ..site import Site
    from ..workload.jobs import JobTable
    from .outcome import Outcome


def job_tiers(jobs: JobTable, site: Site) -> list[str]:
    """The QoS tier name of every job (see the module's rule); empty names when the site has no tiers."""
    tiers = sorted(site.policy.qos_tiers, key=lambda t: -t.priority)
    if not tiers:
        return [""] * len(jobs)
    names = {t.name for t in tiers}
    of_class = {wc.name: wc.qos for wc in site.policy.workload_classes if wc.qos}
    default = of_class.get(site.policy.default_class or "", tiers[-1].name)
    by_priority = {float(t.priority): t.name for t in reversed(tiers)}  # equal priorities: the higher tier
    per_class = [c if c in names else of_class.get(c, "") for c in jobs.class_names]
    out = []
    for k, prio in zip(jobs.wclass.tolist(), jobs.qos_priority.tolist()):
        tier = per_class[k] if 0 <= k < len(per_class) else ""
        out.append(tier or by_priority.get(prio, default))
    return out


def sim_sla_rows(jobs: JobTable, out: Outcome, site: Site) -> list[TierRow]:
    """Per tier, the share of the run's jobs that started within ``max_wait`` (one :class:`TierRow` each)."""
    started = ~np.isnan(out.begin)
    end = float(np.nanmax(np.concatenate([out.end, out.begin, jobs.submit]))) if len(jobs) else 0.0
    waits = [JobWait(str(int(i)), tier, float(s), float(b - s) if ok else None, "COMPLETED" if ok else "PENDING")
             for i, tier, s, b, ok in zip(jobs.id, job_tiers(jobs, site), jobs.submit, out.begin, started)]
    return sla_rows(waits, site.policy.qos_tiers, end)


def sla_metrics(jobs: JobTable, out: Outcome, site: Site) -> dict[str, dict]:
    """The run's SLA as result-row metrics: tier -> attainment_pct, target_pct, met, decided, verdict (tiers
    with a ``max_wait`` only)."""
    return {r.tier: {"attainment_pct": r.attainment_pct, "target_pct": r.target_pct, "met": r.met,
                     "decided": r.decided, "verdict": r.verdict}
            for r in sim_sla_rows(jobs, out, site) if r.max_wait_s is not None}
