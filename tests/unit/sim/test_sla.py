"""SLA attainment of a simulated run: each job's tier, the sla report's rule on simulated waits, the switch."""

from __future__ import annotations

import numpy as np

from slurm_plugin.sim.outcome import Outcome
from slurm_plugin.sim.run import prepare, simulate
from slurm_plugin.site import load_site
from slurm_plugin.sim.sla import job_tiers, sim_sla_rows
from slurm_plugin.workload.jobs import JobTable

NAN = float("nan")


def _run(jobs: JobTable, begin: list[float]) -> Outcome:
    b = np.array(begin)
    return Outcome(alloc=np.zeros(len(jobs)), begin=b, end=b + jobs.run, group_core_s=np.zeros(1), energy_j=0.0,
                   cost=0.0, timeouts=0, events=0)


def test_a_jobs_tier_comes_from_its_class_then_its_qos_priority_then_the_default_class():
    site = load_site("demo")  # ai-training -> gold, video-render/web -> silver, batch (default) -> bronze
    jobs = JobTable.build({"submit": [0.0] * 5, "run": [10.0] * 5, "limit": [60.0] * 5, "nodes": [1] * 5,
                           "cores": [1] * 5, "wclass": [0, 1, 2, -1, -1],
                           "qos_priority": [0.0, 0.0, 0.0, 500.0, 7.0]},
                          class_names=("ai-training", "web", "gold"))
    assert job_tiers(jobs, site) == ["gold", "silver", "gold", "silver", "bronze"]


def test_attainment_follows_the_sla_reports_rule():
    site = load_site("demo")  # gold max_wait 10:00
    n = 5
    jobs = JobTable.build({"submit": [0.0, 0.0, 0.0, 0.0, 1000.0], "run": [10.0] * n, "limit": [60.0] * n,
                           "nodes": [1] * n, "cores": [1] * n, "wclass": [0] * n}, class_names=("ai-training",))
    # waits 600 (met), 601 and 2000 (missed); two never started, still pending at the run's end (2010 s: the
    # last job's end) 2010 and 1010 s after submit, both past 600 s: missed already
    out = _run(jobs, [600.0, 601.0, NAN, 2000.0, NAN])
    gold = next(r for r in sim_sla_rows(jobs, out, site) if r.tier == "gold")
    assert (gold.jobs, gold.decided, gold.met, gold.pending_late) == (5, 5, 1, 2), gold
    assert gold.attainment_pct == 20.0 and gold.verdict == "missed"


def test_simulate_reports_sla_only_when_asked():
    p = prepare("synthetic:jobs=200,seed=3", "demo")
    plain, _ = simulate(p, "fcfs")
    row, out = simulate(p, "fcfs", sla=True)
    assert "sla" not in plain["metrics"]
    sla = row["metrics"]["sla"]
    assert set(sla) == {t.name for t in p.site.policy.qos_tiers if t.max_wait}
    assert sum(v["decided"] for v in sla.values()) == int((~np.isnan(out.begin)).sum())  # all started: decided
    tiers = np.array(job_tiers(p.workload.jobs, p.site))
    wait = out.begin - p.workload.jobs.submit
    gold = tiers == "gold"
    assert sla["gold"]["met"] == int((wait[gold] <= 600.0).sum())
    assert {k: v for k, v in plain["metrics"].items()} == {k: v for k, v in row["metrics"].items() if k != "sla"}
