"""The daemon's Prometheus metrics: the series exist in the text exposition and move with the requests."""

from __future__ import annotations

import dataclasses
import json
import os
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slurm_plugin.daemon import AdmissionServer
from slurm_plugin.daemon.metrics import AdmissionMetrics, parse_listen
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import JobState, SnapshotRefresher
from tests.unit.admission.builders import demo, node


def samples(text: bytes) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value, parsed by prometheus_client's own parser."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text.decode()) for s in fam.samples}


def request(job: dict) -> bytes:
    return json.dumps({"v": 1, "op": "submit", "job": {"user_id": 0, **job}}).encode()


@pytest.fixture
def server(tmp_path):
    refresher = SnapshotRefresher(lambda: dataclasses.replace(demo(), taken_at=time.time()))
    refresher.refresh_once()
    return AdmissionServer(tmp_path / "hs.sock", load_site("demo"), refresher, {os.getuid()})


def test_series_move_with_decisions(server):
    before = samples(server.metrics.text())
    assert before[("hetsched_admission_requests_total", (("decision", "accept"),))] == 0
    server.answer(request({"gres": "gres:gpu:1"}))  # routed to the gpu partition: accepted with changes
    server.answer(request({"gres": "gres:gpu:9"}))  # no node has 9 GPUs: refused
    server.answer(request({"gres": "gres:gpu:1", "partition": "batch"}))  # batch has no GPU node: refused
    server.answer(b"{not json")
    after = samples(server.metrics.text())
    assert after[("hetsched_admission_requests_total", (("decision", "modify"),))] == 1
    assert after[("hetsched_admission_requests_total", (("decision", "reject"),))] == 2
    assert after[("hetsched_admission_requests_total", (("decision", "error"),))] == 1
    assert after[("hetsched_admission_refusals_total", (("reason", "gres"),))] == 1
    assert after[("hetsched_admission_refusals_total", (("reason", "partition"),))] == 1
    assert after[("hetsched_admission_bad_requests_total", (("reason", "malformed"),))] == 1
    assert after[("hetsched_admission_decision_kinds_total", (("kind", "accel"),))] == 1
    assert after[("hetsched_admission_request_seconds_count", ())] == 3  # decided ones; errors are counted apart
    assert 0 <= after[("hetsched_admission_snapshot_age_seconds", ())] < 60


def test_unanswered_calls_the_shim_reports_are_counted(server):
    server.answer(json.dumps({"v": 1, "op": "submit", "unanswered": 5, "job": {}}).encode())
    server.answer(request({}))
    assert samples(server.metrics.text())[("hetsched_shim_unanswered_total", ())] == 5
    assert b"unanswered must be a whole number" in server.answer(
        json.dumps({"v": 1, "op": "submit", "unanswered": -1, "job": {}}).encode())


def test_a_newer_shims_fields_are_answered_and_counted(server):
    """Upgrade order either way: a field this daemon does not know is ignored (counted), not an error reply
    that would fail every submission open until the daemon is upgraded too."""
    reply = json.loads(server.answer(json.dumps({"v": 1, "op": "submit", "trace": "abc",
                                                 "job": {"user_id": 0, "gres": "gres:gpu:1", "gpu_bind": "x"}}).encode()))
    assert reply["ok"] is True and reply["set"]["partition"] == "gpu"
    got = samples(server.metrics.text())
    assert got[("hetsched_admission_unknown_fields_total", ())] == 2
    assert got[("hetsched_admission_requests_total", (("decision", "modify"),))] == 1


def test_no_job_ids_or_users_in_labels(server):
    for i in range(50):
        server.answer(request({"gres": f"gres:gpu:{i}", "name": f"job{i}", "user_id": i}))
    label_values = {v for (_, labels) in samples(server.metrics.text()) for _, v in labels}
    assert not any(v.startswith("job") or v.isdigit() for v in label_values if v not in ("+Inf",)), label_values


def test_endpoint_and_textfile(tmp_path):
    metrics = AdmissionMetrics(snapshot_age=lambda: 2.5)
    url = metrics.serve("127.0.0.1:0")  # port 0: any free one
    textfile = tmp_path / "node-exporter" / "hetsched.prom"
    try:
        metrics.start_textfile(textfile, interval_s=3600)
        metrics.decided("accept", False, ())
        with urllib.request.urlopen(url, timeout=5) as reply:
            scraped = samples(reply.read())
    finally:
        metrics.close()  # writes the file one last time
    assert scraped[("hetsched_admission_requests_total", (("decision", "accept"),))] == 1
    assert scraped[("hetsched_admission_snapshot_age_seconds", ())] == 2.5
    written = samples(textfile.read_bytes())
    assert written[("hetsched_admission_requests_total", (("decision", "accept"),))] == 1
    assert not list(textfile.parent.glob(".*"))  # no temporary file left behind


def test_taken_port_does_not_stop_admission():
    first = AdmissionMetrics()
    url = first.serve("127.0.0.1:0")
    try:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        assert AdmissionMetrics().serve(f"127.0.0.1:{port}") is None
    finally:
        first.close()


@pytest.mark.parametrize("value, parsed", [("127.0.0.1:9817", ("127.0.0.1", 9817)), ("off", None), (None, None),
                                           ("[::1]:9000", ("::1", 9000)), (":9000", ("127.0.0.1", 9000))])
def test_parse_listen(value, parsed):
    assert parse_listen(value) == parsed


@pytest.mark.parametrize("value", ["9817", "host:", "host:99999", "host:abc"])
def test_parse_listen_refuses(value):
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_listen(value)


def test_pool_gauges_from_the_snapshot(tmp_path):
    jobs = tuple(JobState(i, "PENDING", comment="class=web", user_id=0, submit_time=time.time() - 60 * i)
                 for i in range(1, 4))
    snap = dataclasses.replace(demo(armn1=node("armn1", "aarch64", flags=("powered_down",))), jobs=jobs,
                               taken_at=time.time())
    refresher = SnapshotRefresher(lambda: snap)
    refresher.refresh_once()
    server = AdmissionServer(tmp_path / "hs.sock", load_site("demo"), refresher, {os.getuid()})
    got = samples(server.metrics.text())
    assert got[("hetsched_pool_nodes", (("group", "cpu-arm"), ("power", "off")))] == 1
    assert got[("hetsched_pool_nodes", (("group", "cpu-arm"), ("power", "on")))] == 2
    web = [k for k in got if k[0] == "hetsched_pool_pending_jobs" and ("class", "web") in k[1]]
    assert len(web) == 1 and got[web[0]] == 3
    oldest = got[("hetsched_pool_oldest_wait_seconds", web[0][1])]
    assert 180 <= oldest < 240


def test_pool_summary_from_the_snapshot_worker_is_what_a_scrape_reads(tmp_path, monkeypatch):
    """The daemon's snapshot worker computes the pool summary (prepare_pool, its own Site object loaded from
    the same file) and it comes back pickled in the snapshot's memo: the scrape computes nothing."""
    import pickle
    import shutil

    from slurm_plugin.daemon import pool
    from slurm_plugin.site import SITE_CONFIGS

    site_file = tmp_path / "site.yaml"
    shutil.copy(SITE_CONFIGS / "demo.yaml", site_file)
    jobs = (JobState(1, "PENDING", comment="class=web", user_id=0, submit_time=time.time() - 30),)
    snap = dataclasses.replace(demo(), jobs=jobs, taken_at=time.time())
    back = pickle.loads(pickle.dumps(pool.prepare_pool(str(site_file), snap)))
    assert back.jobs == () and back.finished == () and back.nodes == snap.nodes  # the daemon never unpickles jobs

    def not_at_scrape(*_):
        raise AssertionError("computed at scrape time")
    monkeypatch.setattr(pool, "_pending_groups", not_at_scrape)
    monkeypatch.setattr(pool, "_node_groups", not_at_scrape)
    site = load_site(site_file)  # the daemon's own object: another id, the same content
    got = samples(AdmissionMetrics(pool=lambda: (site, back)).text())
    assert got[("hetsched_pool_nodes", (("group", "cpu-arm"), ("power", "on")))] == 3
    assert sum(v for (name, _), v in got.items() if name == "hetsched_pool_pending_jobs") == 1


def test_a_summary_missing_from_a_snapshot_sent_without_jobs_is_an_error_not_zero(tmp_path):
    """prepare_pool sends the snapshot without its jobs: a pool summary the worker did not compute (another
    site's key) cannot be computed from the empty job list, so it raises instead of reporting no pending jobs."""
    from slurm_plugin.daemon import pool
    from slurm_plugin.site import SITE_CONFIGS

    jobs = (JobState(1, "PENDING", comment="class=web", user_id=0, submit_time=time.time() - 30),)
    back = pool.prepare_pool(str(SITE_CONFIGS / "demo.yaml"), dataclasses.replace(demo(), jobs=jobs))
    assert sum(c for c, _ in pool.pending_groups(load_site("demo"), back).values()) == 1  # from the memo
    with pytest.raises(RuntimeError, match="not in its memo"):
        pool.pending_groups(load_site("large"), back)


def test_pool_power_cost_and_energy(tmp_path):
    """cpu-arm (3 nodes: idle 60 W, busy 200 W, off 3 W, 0.55/h): one off, one half-busy, one idle
    -> 3 + (60 + 70) + 60 = 193 W and 1.10/h; energy is the first snapshot's draw over the 10 s to the next."""
    snaps = [dataclasses.replace(demo(armn1=node("armn1", "aarch64", flags=("powered_down",)),
                                      armn2=node("armn2", "aarch64", used=32)), taken_at=1000.0 + 10 * i)
             for i in range(2)]
    current = {"snap": snaps[0]}
    metrics = AdmissionMetrics(pool=lambda: (load_site("demo"), current["snap"]))
    first = samples(metrics.text())
    current["snap"] = snaps[1]
    second = samples(metrics.text())
    assert first[("hetsched_pool_power_watts", (("group", "cpu-arm"),))] == pytest.approx(193.0)
    assert first[("hetsched_pool_cost_per_hour", (("group", "cpu-arm"),))] == pytest.approx(1.10)
    assert first[("hetsched_pool_energy_joules_total", (("group", "cpu-arm"),))] == 0
    assert second[("hetsched_pool_energy_joules_total", (("group", "cpu-arm"),))] == pytest.approx(1930.0)
    current["snap"] = snaps[0]  # an older snapshot (never happens; must not count backwards)
    assert samples(metrics.text())[("hetsched_pool_energy_joules_total", (("group", "cpu-arm"),))] == \
        pytest.approx(1930.0)


def test_sla_attainment_and_drained_nodes_by_fault_class():
    """gold (max_wait 10:00, 99.99 %): two started within it, one after 20 min, one pending for 30 min (missed),
    one pending for 1 min (not decided yet) -> 2 of 4; silver has no jobs: no series. Drains: the health
    check's Xid 79 reason gives its class, an admin's drain counts as 'other'."""
    now = 100_000.0
    jobs = (JobState(1, "RUNNING", qos="gold", submit_time=now - 900, start_time=now - 800),
            JobState(2, "RUNNING", qos="gold", submit_time=now - 3600, start_time=now - 3590),
            JobState(3, "RUNNING", qos="gold", submit_time=now - 1500, start_time=now - 300),
            JobState(4, "PENDING", qos="gold", submit_time=now - 1800),
            JobState(5, "PENDING", qos="gold", submit_time=now - 60))
    snap = dataclasses.replace(
        demo(a100n1=dataclasses.replace(node("a100n1", "x86_64"), state="idle", flags=("drain",),
                                        reason="hetsched: health Xid 79: gpu_lost (drain) [nvidia-xid-79]"),
             x86n1=dataclasses.replace(node("x86n1", "x86_64"), state="idle", flags=("drain",), reason="bad fan")),
        jobs=jobs, taken_at=now)
    site = load_site("demo")
    got = samples(AdmissionMetrics(pool=lambda: (site, snap)).text())
    assert got[("hetsched_pool_sla_attainment_ratio", (("tier", "gold"),))] == 0.5
    assert got[("hetsched_pool_sla_target_ratio", (("tier", "gold"),))] == pytest.approx(0.9999)
    assert not [k for k in got if k[0] == "hetsched_pool_sla_attainment_ratio" and ("tier", "silver") in k[1]]
    assert got[("hetsched_pool_drained_nodes", (("fault_class", "gpu_lost"),))] == 1
    assert got[("hetsched_pool_drained_nodes", (("fault_class", "other"),))] == 1
