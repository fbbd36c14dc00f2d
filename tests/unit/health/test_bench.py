"""Benchmarks: factors against the group median, slow nodes drained, small groups never judged."""

from __future__ import annotations

import pytest

from slurm_plugin.hw.bench import analyze, drains, measure


def res(g, b):
    return {"gemm_gflops": g, "triad_gbs": b}


def test_a_node_20_percent_below_its_group_median_is_slow_and_drained():
    results = {"a1": res(100, 10), "a2": res(98, 10.2), "a3": res(75, 10), "a4": res(101, 9.9),
               "x1": res(10, 1), "x2": res(50, 5)}
    groups = {"a1": "arm", "a2": "arm", "a3": "arm", "a4": "arm", "x1": "x86", "x2": "x86"}
    verdicts = {v.node: v for v in analyze(results, groups, threshold=0.2)}
    assert verdicts["a3"].slow == ("gemm_gflops",) and verdicts["a3"].factors["gemm_gflops"] == 0.758
    assert not verdicts["a1"].slow and not verdicts["a4"].slow
    assert not verdicts["x1"].slow  # a group of two: reported, never judged
    (drain,) = drains(list(verdicts.values()), 0.2).actions
    assert drain.nodes == ("a3",) and drain.action == "DRAIN"
    assert drain.reason == "bench: degraded, gemm_gflops 0.76 of arm median (limit 0.80)"


def test_measure_returns_positive_numbers():
    got = measure(n=64, triad_mb=1, repeats=1)
    assert got["gemm_gflops"] > 0 and got["triad_gbs"] > 0


def test_measured_group_factors_reach_the_site_model_through_the_overlay(tmp_path):
    """cpu-x86 and gpu-a100 are the demo's x86 groups: the a100 hosts measure at 80 % of the x86 median, the ARM
    groups have their own reference. The overlay sets each group's speed_factor, and the speed table the
    packing and the simulator use multiplies it into every class's factor (video-render on cpu-arm: 0.9 x 0.5)."""
    import yaml

    from slurm_plugin.hw.bench import factor_overlay, group_factors
    from slurm_plugin.pack.classes import speed_table
    from slurm_plugin.site import SITE_CONFIGS, SiteError, load_site

    results = {"x1": res(100, 10), "x2": res(100, 10), "x3": res(100, 10), "g1": res(80, 8), "g2": res(80, 8),
               "a1": res(50, 5), "a2": res(50, 5), "h1": res(25, 2.5)}
    groups = {"x1": "cpu-x86", "x2": "cpu-x86", "x3": "cpu-x86", "g1": "gpu-a100", "g2": "gpu-a100",
              "a1": "cpu-arm", "a2": "cpu-arm", "h1": "gpu-h100"}
    archs = {"cpu-x86": "x86_64", "gpu-a100": "x86_64", "cpu-arm": "aarch64", "gpu-h100": "aarch64"}
    factors = group_factors(results, groups, archs)
    assert factors == {"cpu-arm": 1.0, "cpu-x86": 1.0, "gpu-a100": 0.8, "gpu-h100": 0.5}
    overlay = factor_overlay({n: {**r, "job": 10 + i} for i, (n, r) in enumerate(results.items())}, groups, archs,
                             analyze(results, groups), {"results": "/bench"})
    assert overlay["groups"] == factors and overlay["provenance"]["jobs"] == list(range(10, 18))
    (tmp_path / "factors.yaml").write_text(yaml.safe_dump(overlay))
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    base = load_site(SITE_CONFIGS / "demo.yaml")
    (tmp_path / "site.yaml").write_text(yaml.safe_dump({**data, "speed_factors": "factors.yaml"}))
    site = load_site(tmp_path / "site.yaml")
    assert site.group("gpu-h100").speed_factor == 0.5 and site.group("cpu-riscv").speed_factor == 1.0
    before, after = dict(speed_table(base, base.group("gpu-h100"))), dict(speed_table(site, site.group("gpu-h100")))
    assert before["ai-training"] == 2.0 and after["ai-training"] == 1.0
    # a group the site does not have, or a factor out of range, is an error naming the overlay and the group
    (tmp_path / "factors.yaml").write_text(yaml.safe_dump({**overlay, "groups": {"cpu-x86": 1.0, "nope": 0.9}}))
    with pytest.raises(SiteError, match=r"factors.yaml.*nope"):
        load_site(tmp_path / "site.yaml")
    (tmp_path / "factors.yaml").write_text(yaml.safe_dump({**overlay, "groups": {"cpu-x86": 0}}))
    with pytest.raises(SiteError, match=r"cpu-x86.*not a number in \(0, 10\]"):
        load_site(tmp_path / "site.yaml")
