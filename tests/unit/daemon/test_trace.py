"""The daemon's opt-in per-request trace: lines written in batches, read back by time window."""

from __future__ import annotations

import time

from slurm_plugin.daemon.trace import FLUSH_EVERY, AdmissionTrace, read_trace


def test_trace_is_off_without_the_variable(monkeypatch):
    monkeypatch.delenv("HETSCHED_ADMISSION_TRACE", raising=False)
    assert AdmissionTrace.from_env() is None


def test_requests_and_lag_are_written_in_batches_and_cut_by_time(tmp_path, monkeypatch):
    path = tmp_path / "trace.txt"
    monkeypatch.setenv("HETSCHED_ADMISSION_TRACE", str(path))
    trace = AdmissionTrace.from_env()
    t0 = time.monotonic()
    trace.request(0.000250, 0.000200)
    trace.lag(0.003)
    assert not path.exists()  # not yet: one write per batch
    for _ in range(FLUSH_EVERY - 2):
        trace.request(0.001, 0.0009)
    assert path.exists() and not trace.lines
    trace.request(0.5, 0.001)  # after the window below
    t1 = time.monotonic()
    trace.flush()
    got = read_trace(str(path), t0, t1)
    assert got["wall_us"][0] == 250.0 and got["cpu_us"][0] == 200.0 and got["lag_us"] == [3000.0]
    assert len(got["wall_us"]) == FLUSH_EVERY
    assert read_trace(str(path), t1 + 10, t1 + 20) == {"wall_us": [], "cpu_us": [], "lag_us": []}
    assert read_trace(str(tmp_path / "none"), 0, 1)["wall_us"] == []
