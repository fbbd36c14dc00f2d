"""``hetsched bench cli``'s measuring loop (on the bare interpreter only, so it takes a second)."""

from __future__ import annotations

import pytest

from slurm_plugin.cli import bench_cli


def test_percentile_interpolates():
    assert bench_cli.percentile([3, 1, 2], 0.5) == 2
    assert bench_cli.percentile([1, 2, 3, 4], 0.5) == 2.5
    assert bench_cli.percentile([10.0], 0.95) == 10.0


def test_measure_reports_each_tree_and_refuses_a_failing_command(monkeypatch, tmp_path):
    monkeypatch.setattr(bench_cli, "MEASURED", {"python_startup_ms": ["-c", "pass"]})
    out = bench_cli.measure(3, warmup=0, trees={"current": None, "baseline": str(tmp_path)})
    assert set(out) == {"current", "baseline"}
    fig = out["baseline"]["python_startup_ms"]
    assert fig["runs"] == 3 and 0 < fig["min"] <= fig["p50"] <= fig["p95"] and fig["cpu_p50"] > 0
    monkeypatch.setattr(bench_cli, "MEASURED", {"broken": ["-c", "raise SystemExit(3)"]})
    with pytest.raises(RuntimeError, match="exited 3"):
        bench_cli.measure(3, warmup=0)
