"""``hetsched status``'s parts on in-memory snapshots: power states per node group, queue per class/tier."""

from __future__ import annotations

import dataclasses
import json

from slurm_plugin.cli.status import last_cycle
from slurm_plugin.daemon.pool import node_groups, pending_queue
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import JobState, Snapshot
from tests.unit.admission.builders import demo, drained, node

SITE = load_site("demo")


def test_power_states_per_group():
    snap = demo(armn1=node("armn1", "aarch64", flags=("powered_down",)), armn2=drained(node("armn2", "aarch64")),
                armn3=node("armn3", "aarch64", flags=("powering_up",)))
    rows = {r["group"]: r for r in node_groups(SITE, snap)}
    assert rows["cpu-arm"]["power"] == {"drained": 1, "off": 1, "powering_up": 1}
    assert rows["cpu-x86"]["power"] == {"on": 2}
    assert sum(r["nodes"] for r in rows.values()) == len(snap.nodes)


def test_unknown_when_slurm_did_not_answer():
    assert {s for r in node_groups(SITE, Snapshot.empty()) for s in r["power"]} == {"unknown"}


def test_pending_per_class_and_tier_with_oldest_wait():
    jobs = (JobState(1, "PENDING", comment="class=web", user_id=0, submit_time=100),
            JobState(2, "PENDING", comment="class=web", user_id=0, submit_time=400),
            JobState(3, "PENDING", user_id=0, submit_time=900),
            JobState(4, "RUNNING", comment="class=web", user_id=0, submit_time=0))
    rows = pending_queue(SITE, dataclasses.replace(demo(), jobs=jobs), now=1000.0)
    web = next(r for r in rows if r["class"] == "web")
    assert web["pending"] == 2 and web["oldest_wait_s"] == 900
    assert sum(r["pending"] for r in rows) == 3


def test_last_cycle_reads_without_moving_a_bad_file(tmp_path):
    assert "no cycle has run" in last_cycle(tmp_path, 0.0)["error"]
    (tmp_path / "cycle-state.json").write_text("{not json")
    assert last_cycle(tmp_path, 0.0)["error"].startswith("unreadable")
    assert (tmp_path / "cycle-state.json").exists()
    (tmp_path / "cycle-state.json").write_text(json.dumps({"cycles": 3, "last_ok_t": 90.0}))
    assert last_cycle(tmp_path, 100.0)["last_ok_age_s"] == 10.0


def test_ranking_in_use_from_the_cycle_loops_endpoint():
    from slurm_plugin.cli.status import ranking_in_use
    from slurm_plugin.cycle.metrics import CycleMetrics
    from slurm_plugin.decision import Decision

    metrics = CycleMetrics()
    url = metrics.serve("127.0.0.1:0")
    try:
        assert ranking_in_use(url)["ranking"] is None  # no cycle yet
        metrics.cycle_done(Decision((), "rank:dqn+power"), [], 0.0, 1.0)
        metrics.cycle_done(Decision((), "rank:fallback-multifactor+power"), [], 0.0, 2.0)
        assert ranking_in_use(url) == {"cycle_metrics_url": url, "ranking": "rank:fallback-multifactor"}
    finally:
        metrics.close()
    assert ranking_in_use(url)["ranking_error"].startswith("no answer")
    assert ranking_in_use(None) == {"cycle_metrics_url": None, "ranking": None}
