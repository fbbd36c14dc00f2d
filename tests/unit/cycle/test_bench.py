"""The cycle benchmark's synthetic cluster (both Slurm JSON layouts) and `hetsched bench cycle --json`."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from slurm_plugin.cycle.bench import exponents
from slurm_plugin.site import load_site, resolve_site_path
from slurm_plugin.snapshot.collect import build_snapshot
from slurm_plugin.snapshot.synthetic import pending_sizes, scaled_site, synthetic_docs


@pytest.fixture(scope="module")
def large():
    return load_site(resolve_site_path("large"))


def test_scaled_site_reaches_the_node_count_and_keeps_every_group(large):
    big = scaled_site(large, 10_000)
    assert abs(big.node_count() - 10_000) <= len(large.node_groups)
    assert [g.name for g in big.node_groups] == [g.name for g in large.node_groups]
    assert all(g.count >= 1 for g in scaled_site(large, 5).node_groups)


def test_both_layouts_parse_to_the_same_snapshot(large):
    site = scaled_site(large, 300)
    a, b = (build_snapshot(*synthetic_docs(site, 500, fmt, seed=3), taken_at=0.0) for fmt in ("22.05", "24.11"))
    strip = (lambda jobs: [dataclasses.replace(j, memory_per_cpu_mb=None) for j in jobs])  # 24.11 sets it to 0
    assert a.nodes == b.nodes and a.partitions == b.partitions and strip(a.jobs) == strip(b.jobs)
    assert len(a.nodes) == site.node_count() and sum(j.state == "PENDING" for j in a.jobs) == 500
    assert sum("powered_down" in n.flags for n in a.nodes) == sum(int(g.count * 0.2) for g in site.node_groups)
    gpu_jobs = [j for j in a.jobs if j.state == "PENDING" and j.gres]
    parts = {p.name: set(p.nodes) for p in a.partitions}
    gpu_nodes = {n.name for n in a.nodes if any(g.name == "gpu" for g in n.gres)}
    assert gpu_jobs and all(parts[j.partition] & gpu_nodes for j in gpu_jobs)


def test_exponents_fit_the_growth():
    rows = [{"format": "22.05", "nodes": 10, "pending": p, "step": s, "seconds": k * p ** e}
            for p in (1000, 10_000, 100_000) for s, k, e in (("rank", 1e-6, 1.0), ("pack", 1e-8, 2.0))]
    rows.append({"format": "22.05", "nodes": 10, "pending": 1000, "step": "tiny", "seconds": 1e-5})
    got = {e["step"]: round(e["exponent"], 6) for e in exponents(rows)}
    assert got == {"rank": 1.0, "pack": 2.0}
    assert pending_sizes(1000, 100_000, 3) == [1000, 10_000, 100_000]


def test_bench_cycle_json_is_one_clean_document(tmp_path):
    """stdout is the JSON alone (HiGHS's banner, printed when a solver instance is made, went there before)."""
    done = subprocess.run([sys.executable, "-m", "slurm_plugin", "bench", "cycle", "--site", "demo", "--nodes", "40",
                           "--pending", "30,90", "--format", "24.11", "--repeat", "1", "--json",
                           "--output", str(tmp_path / "b.json")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc == json.loads((tmp_path / "b.json").read_text())
    steps = [r["step"] for r in doc["rows"] if r["pending"] == 30]
    assert steps == ["parse", "wipe", "rank", "pack", "reshape", "power", "decide"], steps
    decide = [r for r in doc["rows"] if r["step"] == "decide"]
    assert decide and all(r["seconds"] > 0 and abs(r["nodes"] - 40) <= 10 for r in decide)
    assert doc["provenance"]["git_commit"] is not None
