"""What a fidelity replay records of slurmctld: sdiag's counters and the log's scheduling events."""

from __future__ import annotations

from datetime import datetime

from slurm_plugin.sim.fidelity import sdiag_stats
from slurm_plugin.sim.fidelity_record import ctld_events

SDIAG = """*******************************************************
sdiag output at Tue Dec 01 12:22:02 2026 (1796127722)
Data since      Tue Dec 01 12:19:39 2026 (1796127579)
*******************************************************
Server thread count:  4
Jobs submitted: 60
Jobs started:   44

Main schedule statistics (microseconds):
	Last cycle:   337
	Last queue length: 25

Backfilling stats
	Total backfilled jobs (since last slurm start): 29
	Total cycles: 4
	Last cycle when: Tue Dec 01 12:22:02 2026 (1796127722)
	Last cycle: 10502
	Last depth cycle: 25
	Last depth cycle (try sched): 25

Latency for 1000 calls to gettimeofday(): 17 microseconds

Remote Procedure Call statistics by message type
	REQUEST_PARTITION_INFO                  ( 2009) count:3
"""

LOG = """[2026-12-01T12:20:02.246] sched/backfill: _attempt_backfill: beginning
[2026-12-01T12:20:02.249] sched/backfill: _dump_job_sched: JobId=21 to start at 2026-12-01T12:21:02, end at 2026-12-01T12:22:00 on nodes x86n[1-2] in partition fidelity
[2026-12-01T12:20:02.259] sched/backfill: _start_job: Started JobId=27 in fidelity on armn3
[2026-12-01T12:20:02.260] sched/backfill: _attempt_backfill: completed testing 17(17) jobs, usec=2637
[2026-12-01T12:20:03.100] sched: Allocate JobId=30 NodeList=npun1 #CPUs=8 Partition=fidelity
[2026-12-01T12:20:32.300] sched/backfill: _attempt_backfill: system state changed, breaking out after testing 5(4) jobs
[2026-12-01T12:20:53.476] job_time_limit: Configuration for JobId=27 complete
[2026-12-01T12:20:53.539] Time limit exhausted for JobId=32
"""


def _t(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_sdiag_stats_by_section():
    s = sdiag_stats(SDIAG)
    assert s["general"]["jobs started"] == 44 and s["main"]["last queue length"] == 25
    assert s["backfill"]["last depth cycle"] == 25 and s["backfill"]["last depth cycle (try sched)"] == 25
    assert s["backfill"]["total backfilled jobs (since last slurm start)"] == 29
    assert "last cycle when" not in s["backfill"] and "count" not in s["backfill"]


def test_ctld_events_name_the_scheduler_and_the_cycle_ends():
    e = ctld_events(LOG)
    assert e["start"] == [(_t("2026-12-01T12:20:02.259"), 27, "backfill"), (_t("2026-12-01T12:20:03.100"), 30, "main")]
    assert e["bf_end"] == [(_t("2026-12-01T12:20:02.260"), "completed", 17, 17),
                           (_t("2026-12-01T12:20:32.300"), "interrupted", 5, 4)]
    assert e["config_done"] == [(_t("2026-12-01T12:20:53.476"), 27)]
    assert e["time_limit"] == [(_t("2026-12-01T12:20:53.539"), 32)]
