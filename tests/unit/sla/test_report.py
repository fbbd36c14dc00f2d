"""The SLA report's rows (pure): met / missed / undecided jobs per tier, percentiles, verdicts."""

from __future__ import annotations

from slurm_plugin.sla import sla_rows
from slurm_plugin.sla.report import percentile
from slurm_plugin.site import load_site
from slurm_plugin.workload.slurmdbd import JobWait, parse_waits, sacct_time

NOW = 1_000_000.0


def _job(qos, wait, state="COMPLETED", age=3600.0):
    return JobWait("1", qos, NOW - age, wait, state)


def test_rows_per_tier_in_priority_order_then_other_qos():
    tiers = load_site("demo").policy.qos_tiers  # gold 10:00 at 99.99 %, silver 1:00:00 at 99.9 %, bronze 1-0
    jobs = [_job("gold", 5.0), _job("gold", 600.0), _job("gold", 601.0),  # the last one missed by a second
            _job("gold", None, "PENDING", age=700.0),  # pending past 10 min: missed already
            _job("gold", None, "PENDING", age=60.0),  # pending within: not decided yet
            _job("gold", None, "CANCELLED", age=9000.0),  # never started, withdrawn: left out
            _job("silver", 30.0), _job("normal", 1.0)]
    rows = {r.tier: r for r in sla_rows(jobs, tiers, NOW)}
    assert list(rows) == ["gold", "silver", "bronze", "normal"]
    g = rows["gold"]
    assert (g.jobs, g.decided, g.met, g.pending_late) == (6, 4, 2, 1)
    assert g.attainment_pct == 50.0 and g.verdict == "missed" and g.max_wait_s == 600.0
    assert (g.wait_p50_s, g.wait_max_s) == (600.0, 601.0)
    assert rows["silver"].verdict == "met" and rows["silver"].attainment_pct == 100.0
    assert rows["bronze"].verdict == "no jobs" and rows["normal"].verdict == "no target"


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert [percentile(values, p) for p in (50, 90, 99, 100)] == [50.0, 90.0, 99.0, 100.0]
    assert percentile([], 50) is None and percentile([7.0], 99) == 7.0


def test_parse_waits_and_the_window():
    jobs = parse_waits("12|gold|2026-12-01T10:00:00|2026-12-01T10:00:30|COMPLETED\n"
                       "13|bronze|2026-12-01T10:00:00|Unknown|PENDING\n"
                       "14|bronze|2026-12-01T10:00:00|None|CANCELLED by 2001\n")
    assert [(j.job_id, j.qos, j.wait_s, j.state) for j in jobs] == [
        ("12", "gold", 30.0, "COMPLETED"), ("13", "bronze", None, "PENDING"), ("14", "bronze", None, "CANCELLED")]
    assert sacct_time("7d") == "now-7days" and sacct_time("12h") == "now-12hours"
    assert sacct_time("2026-11-01") == "2026-11-01"
    for bad in ("7 days", "now-7d; rm", ""):
        try:
            sacct_time(bad)
        except ValueError as err:
            assert "Nd, Nh, Nm" in str(err)
        else:
            raise AssertionError(bad)


def test_a_bad_sacct_line_names_its_line():
    from slurm_plugin.workload import WorkloadError

    try:
        parse_waits("12|gold|2026-12-01T10:00:00|2026-12-01T10:00:30|COMPLETED\n12|gold|x\n", "out.txt")
    except WorkloadError as err:
        assert str(err) == "out.txt:2: 3 fields, want 5 (JobID,QOS,Submit,Start,State)"
    else:
        raise AssertionError("no error")
