"""Malformed site files: every problem is reported with file, field path and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from slurm_plugin.site import SiteError, load_site, parse_site

from .builders import group, mutate

# (what is wrong, mutation, expected path, expected words in the message)
CASES = [
    ("wrong type", lambda d: group(d, 3)["gpu"].update(count="four"),
     "clusters[0].node_groups[3].gpu.count", "valid integer"),
    ("negative count", lambda d: group(d, 1).update(count=-2),
     "clusters[0].node_groups[1].count", "greater than 0"),
    ("zero cores", lambda d: group(d, 0)["cpu"].update(cores=0),
     "clusters[0].node_groups[0].cpu.cores", "greater than 0"),
    ("unknown key with did-you-mean", lambda d: group(d, 3).update(gpus=group(d, 3).pop("gpu")),
     "clusters[0].node_groups[3]", "unknown key 'gpus'; did you mean 'gpu'?"),
    ("unknown top-level key", lambda d: d.update(partitons=[]),
     "(top level)", "did you mean 'partitions'?"),
    ("unknown arch", lambda d: group(d, 0)["cpu"].update(arch="arm64"),
     "clusters[0].node_groups[0].cpu.arch", "'aarch64', 'x86_64' or 'riscv64'"),
    ("unknown time zone", lambda d: group(d, 5).update(timezone="Mars/Olympus"),
     "clusters[0].node_groups[5].timezone", "unknown IANA time zone 'Mars/Olympus'"),
    ("unknown cluster time zone", lambda d: d["clusters"][0].update(timezone="Europe/Pariss"),
     "clusters[0].timezone", "unknown IANA time zone"),
    ("duplicate node names", lambda d: group(d, 1).update(prefix="x86n"),
     "clusters[0].node_groups[1].prefix", "duplicate node name 'x86n1'"),
    ("duplicate group names", lambda d: group(d, 2).update(name="cpu-x86"),
     "clusters[0].node_groups[2].name", "duplicate node group name 'cpu-x86'"),
    ("partition names a missing group", lambda d: d["partitions"][0]["node_groups"].append("cpu-amr"),
     "partitions[0].node_groups[2]", "node group 'cpu-amr' that does not exist; did you mean 'cpu-arm'?"),
    ("two default partitions", lambda d: d["partitions"][1].update(default=True),
     "partitions", "2 partitions are marked default"),
    ("busy below idle power", lambda d: group(d, 0)["power"].update(busy_w=10),
     "clusters[0].node_groups[0].power", "busy_w (10.0) is below idle_w"),
    ("bad calendar time", lambda d: d["policy"]["calendars"][0]["windows"][0].update(start="25:00"),
     "policy.calendars[0].windows[0].start", "not HH:MM"),
    ("bad weekday", lambda d: d["policy"]["calendars"][1]["windows"][0].update(days=["sat", "sunday"]),
     "policy.calendars[1].windows[0].days[1]", "'sun'"),
    ("unknown QoS tier", lambda d: d["policy"]["workload_classes"][0].update(qos="platinum"),
     "policy.workload_classes[0].qos", "unknown QoS tier 'platinum'"),
    ("unknown default class", lambda d: d["policy"].update(default_class="bach"),
     "policy.default_class", "did you mean 'batch'?"),
    ("bad max_time", lambda d: d["partitions"][0].update(max_time="forever"),
     "partitions[0].max_time", "should match pattern"),
    ("bad GRES type name", lambda d: group(d, 3)["gpu"].update(type="a 100"),
     "clusters[0].node_groups[3].gpu.type", "should match pattern"),
    ("sockets do not divide cores", lambda d: group(d, 0)["cpu"].update(sockets=3),
     "clusters[0].node_groups[0].cpu", "multiple of sockets"),
    ("no node groups", lambda d: d["clusters"][0].update(node_groups=[]),
     "clusters[0].node_groups", "at least 1"),
]


@pytest.mark.parametrize("what,mutation,path,words", CASES, ids=[c[0] for c in CASES])
def test_bad_site_is_reported_with_file_path_and_expectation(what, mutation, path, words):
    with pytest.raises(SiteError) as err:
        parse_site(mutate(mutation), source="sites/bad.yaml")
    lines = str(err.value).splitlines()
    hits = [line for line in lines if line.startswith(f"sites/bad.yaml: {path}: ")]
    assert hits, f"no problem at {path} in:\n{err.value}"
    assert any(words in line for line in hits), f"expected {words!r} in {hits}"


def test_every_problem_is_reported_at_once_without_echoes():
    def two_faults(d):
        group(d, 3)["gpu"].update(count="four")
        group(d, 5)["timezon"] = group(d, 5).pop("timezone")

    with pytest.raises(SiteError) as err:
        parse_site(mutate(two_faults), source="x.yaml")
    assert [p.path for p in err.value.problems] == ["clusters[0].node_groups[3].gpu.count",
                                                    "clusters[0].node_groups[5]"]
    assert str(err.value).startswith("x.yaml: 2 problem(s) in site description\n")


def test_yaml_syntax_error_names_the_line(tmp_path: Path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: x\nclusters: [\n  - name: y\n")
    with pytest.raises(SiteError) as err:
        load_site(bad)
    assert str(bad) in str(err.value) and "not valid YAML: line" in str(err.value)


def test_missing_file_and_non_mapping(tmp_path: Path):
    with pytest.raises(SiteError, match="cannot read site file"):
        load_site(tmp_path / "nope.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(SiteError, match="expected a mapping at the top level, got list"):
        load_site(tmp_path / "list.yaml")


def test_bundled_examples_load():
    demo, large = load_site("demo"), load_site("large")
    assert 8 <= demo.node_count() <= 12
    assert large.node_count() >= 2000 and len(large.node_groups) >= 10
    regions = {g.region for g in large.node_groups}
    zones = {g.timezone for g in large.node_groups}
    assert len(regions) >= 3 and len(zones) >= 3


def test_model_is_frozen_and_inherits_region():
    site = load_site("demo")
    with pytest.raises(Exception):
        site.name = "other"  # type: ignore[misc]
    x86 = site.group("cpu-x86")
    assert x86.region == "eu-west" and x86.timezone == "Europe/Paris"
    npu = site.group("npu")
    assert npu.region == "apac" and npu.timezone == "Asia/Shanghai"
    assert npu.all_features == ("aarch64", "huawei", "ascend910b", "apac")
    assert site.group("gpu-a100").gres == (("gpu", "a100", 4),)
    assert site.group("cpu-arm").hostnames == ("armn1", "armn2", "armn3")


@pytest.mark.parametrize("count,start,digits,expected", [
    (3, 1, None, ["n1", "n2", "n3"]),
    (10, 1, None, ["n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09", "n10"]),
    (2, 0, 3, ["n000", "n001"]),
    (2, 99, None, ["n099", "n100"]),
])
def test_hostnames(count, start, digits, expected):
    data = mutate(lambda d: group(d, 0).update(prefix="n", count=count, start=start, digits=digits))
    assert list(parse_site(data).group("cpu-x86").hostnames) == expected
