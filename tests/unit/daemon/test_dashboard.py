"""The committed Grafana dashboard (daemon/grafana/hetsched.json): valid JSON of the expected shape, and every
panel query names only series the suite exports (the daemon's and the cycle's, populated as in production)."""

from __future__ import annotations

import dataclasses
import json
import re
import time

from slurm_plugin.cycle.metrics import CycleMetrics
from slurm_plugin.data import data_file
from slurm_plugin.decision import Cause, Decision, PowerNodes
from slurm_plugin.decision.applier import Applied
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import JobState
from tests.unit.admission.builders import demo, node
from tests.unit.daemon.test_metrics import samples

DASHBOARD = data_file("daemon", "grafana/hetsched.json")
SERIES = re.compile(r"\b(hetsched_[a-z0-9_]+)")


def exported() -> set[str]:
    """Every sample name the daemon and the cycle expose once they have seen a request and a cycle."""
    from slurm_plugin.daemon.metrics import AdmissionMetrics

    now = time.time()
    jobs = (JobState(1, "PENDING", comment="class=web", user_id=0, submit_time=now - 5),
            JobState(2, "RUNNING", qos="gold", submit_time=now - 60, start_time=now - 30))
    drained = dataclasses.replace(node("a100n1", "x86_64"), flags=("drain",),
                                  reason="hetsched: health Xid 79: gpu_lost (drain) [nvidia-xid-79]")
    site, snap = load_site("demo"), dataclasses.replace(demo(a100n1=drained), jobs=jobs, taken_at=now)
    daemon = AdmissionMetrics(snapshot_age=lambda: 1.0, pool=lambda: (site, snap))
    daemon.decided("accept", False, ("arch",))
    daemon.decided("reject", False, (), "gres")
    daemon.failed("malformed")
    daemon.observe(0.0002)
    cycle = CycleMetrics()
    d = Decision((PowerNodes(("armn1",), "POWER_UP", "r", Cause.BACKLOG),), "rank:multifactor+pack+power",
                 (("power", 0.1),), (("pack.status", "optimal"), ("pack.gap", 0.0)))
    cycle.cycle_done(d, [Applied(d.actions[0], True)], 0.2, time.time())
    return {name for m in (daemon, cycle) for name, _ in samples(m.text())}


def panels(doc: dict) -> list[dict]:
    out = []
    for p in doc["panels"]:
        out += panels(p) if p.get("type") == "row" and p.get("panels") else [] if p.get("type") == "row" else [p]
    return out


def test_dashboard_shape():
    doc = json.loads(DASHBOARD.read_text())
    assert doc["uid"] and doc["title"] and isinstance(doc["schemaVersion"], int)
    assert [v["name"] for v in doc["templating"]["list"]] == ["datasource"]
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    shown = panels(doc)
    assert len(shown) >= 12
    for p in shown:
        assert p["targets"] and all(t["expr"].strip() and t["refId"] for t in p["targets"]), p["title"]
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]


def test_every_query_names_an_exported_series():
    doc = json.loads(DASHBOARD.read_text())
    names = exported()
    for p in panels(doc):
        for t in p["targets"]:
            used = SERIES.findall(t["expr"])
            assert used, f"panel {p['title']!r}: query names no hetsched series: {t['expr']}"
            missing = sorted(set(used) - names)
            assert not missing, f"panel {p['title']!r}: {missing} not exported (query {t['expr']})"


def test_the_dashboard_covers_what_issue_17_asks():
    exprs = " ".join(t["expr"] for p in panels(json.loads(DASHBOARD.read_text())) for t in p["targets"])
    for series in ("hetsched_pool_nodes", "hetsched_pool_group_info", "hetsched_pool_power_watts",
                   "hetsched_pool_energy_joules_total", "hetsched_pool_pending_jobs", "hetsched_cycle_actions_total",
                   "hetsched_admission_request_seconds_bucket", "hetsched_shim_unanswered_total",
                   "hetsched_pool_sla_attainment_ratio", "hetsched_pool_drained_nodes"):
        assert series in exprs, series
