"""Site files: the grammar of every value rendered into slurm.conf/gres.conf, upper bounds within Slurm's
ranges, and files that are not site descriptions at all (issue 11, items 8 and 12)."""

from __future__ import annotations

import re
import time

import pytest
import yaml

from slurm_plugin.conf import render_site
from slurm_plugin.data import data_file
from slurm_plugin.site import SiteError, load_site, parse_site
from slurm_plugin.site.priority import BAND_SPAN, SITE_FACTOR_MAX, band_site_factor

from .builders import group, mutate

INJECT = "x\nPrologSlurmctld=/tmp/evil.sh"

# (what is wrong, mutation, expected path, expected words)
CASES = [
    # grammar: each free-text field that reaches a Slurm config
    ("newline in cpu.model", lambda d: group(d, 0)["cpu"].update(model=INJECT),
     "clusters[0].node_groups[0].cpu.model", "should match pattern"),
    ("'#' in cpu.model", lambda d: group(d, 0)["cpu"].update(model="EPYC # x"),
     "clusters[0].node_groups[0].cpu.model", "should match pattern"),
    ("newline in slurm.controller", lambda d: d["slurm"].update(controller="ctl\nPrologSlurmctld=/x"),
     "slurm.controller", "should match pattern"),
    ("space in slurm.controller", lambda d: d["slurm"].update(controller="ctl SlurmUser=root"),
     "slurm.controller", "should match pattern"),
    ("'=' in slurm.controller", lambda d: d["slurm"].update(controller="ctl=x"),
     "slurm.controller", "should match pattern"),
    ("newline in gpu.files", lambda d: group(d, 3)["gpu"].update(files="/dev/nvidia[0-3]\nNodeName=evil"),
     "clusters[0].node_groups[3].gpu.files", "should match pattern"),
    ("space in gpu.files", lambda d: group(d, 3)["gpu"].update(files="/dev/nvidia0 Name=mps"),
     "clusters[0].node_groups[3].gpu.files", "should match pattern"),
    ("relative gpu.files", lambda d: group(d, 3)["gpu"].update(files="nvidia0"),
     "clusters[0].node_groups[3].gpu.files", "should match pattern"),
    ("'=' in accelerator files", lambda d: group(d, 5)["accelerators"][0].update(files="/dev/d0 Count=9"),
     "clusters[0].node_groups[5].accelerators[0].files", "should match pattern"),
    ("newline in priority_max_age", lambda d: d["slurm"].update(priority_max_age="7-0\nSlurmUser=root"),
     "slurm.priority_max_age", "should match pattern"),
    ("newline in a feature", lambda d: group(d, 6).update(features=["smartnic\nx=1"]),
     "clusters[0].node_groups[6].features[0]", "should match pattern"),
    ("trailing newline in a name", lambda d: d.update(name="demo\n"), "name", "should match pattern"),
    ("newline in a time zone", lambda d: group(d, 0).update(timezone="UTC\n#x"),
     "clusters[0].node_groups[0].timezone", "unknown IANA time zone"),
    ("newline in max_time", lambda d: d["partitions"][0].update(max_time="1-00:00:00\nx"),
     "partitions[0].max_time", "should match pattern"),
    # upper bounds
    ("a billion nodes", lambda d: group(d, 0).update(count=1_000_000_000),
     "clusters[0].node_groups[0].count", "less than or equal to 65536"),
    ("too many nodes in all", lambda d: [group(d, i).update(count=60_000) for i in (0, 1)],
     "clusters", "at most 100000 per site"),
    ("too many cores", lambda d: group(d, 0)["cpu"].update(cores=70_000, sockets=1),
     "clusters[0].node_groups[0].cpu.cores", "less than or equal to 65533"),
    ("too many CPUs with threads", lambda d: group(d, 0)["cpu"].update(cores=16_384, threads_per_core=8),
     "clusters[0].node_groups[0].cpu", "exceeds Slurm's 65533 CPUs per node"),
    ("memory beyond a PiB", lambda d: group(d, 0).update(memory_gb=10**9),
     "clusters[0].node_groups[0].memory_gb", "less than or equal to 1048576"),
    ("a thousand GPUs per node", lambda d: group(d, 3)["gpu"].update(count=1000),
     "clusters[0].node_groups[3].gpu.count", "less than or equal to 64"),
    ("infinite cost", lambda d: group(d, 0).update(cost_per_hour=float("inf")),
     "clusters[0].node_groups[0].cost_per_hour", "finite number"),
    ("NaN power", lambda d: group(d, 0)["power"].update(idle_w=float("nan")),
     "clusters[0].node_groups[0].power.idle_w", "finite number"),
    ("huge start index", lambda d: group(d, 0).update(start=10**12),
     "clusters[0].node_groups[0].start", "less than or equal to"),
    ("node names too long", lambda d: group(d, 0).update(prefix="n" * 60, digits=8),
     "clusters[0].node_groups[0].prefix", "at most 64"),
    ("tier priority beyond the shim's SiteFactor", lambda d: d["policy"]["qos_tiers"][0].update(priority=300_000),
     "policy.qos_tiers[0].priority", f"less than or equal to {SITE_FACTOR_MAX // BAND_SPAN}"),
    ("top band beyond the shim's SiteFactor", lambda d: d["policy"]["qos_tiers"][0].update(priority=249_990),
     "policy.qos_tiers[0].priority", "the shim accepts at most 1,000,000,000"),
    ("resume timeout beyond uint16", lambda d: d["slurm"].update(resume_timeout=70_000),
     "slurm.resume_timeout", "less than or equal to 65533"),
    ("priority tier beyond uint16", lambda d: d["partitions"][0].update(priority_tier=70_000),
     "partitions[0].priority_tier", "less than or equal to 65533"),
]


@pytest.mark.parametrize("what,mutation,path,words", CASES, ids=[c[0] for c in CASES])
def test_bad_value_is_reported_with_file_path_and_expectation(what, mutation, path, words):
    with pytest.raises(SiteError) as err:
        parse_site(mutate(mutation), source="sites/bad.yaml")
    hits = [line for line in str(err.value).splitlines() if line.startswith(f"sites/bad.yaml: {path}: ")]
    assert hits, f"no problem at {path} in:\n{err.value}"
    assert any(words in line for line in hits), f"expected {words!r} in {hits}"


@pytest.mark.parametrize("value", ["Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz", "EPYC-7313", "Graviton3"])
def test_real_cpu_model_names_pass(value):
    parse_site(mutate(lambda d: group(d, 0)["cpu"].update(model=value)))


@pytest.mark.parametrize("value", ["ctl1", "ctl1.example.org", "ctl1(10.0.0.1)", "localhost"])
def test_controller_host_forms_pass(value):
    parse_site(mutate(lambda d: d["slurm"].update(controller=value)))


def test_largest_top_band_the_shim_accepts_passes():
    top = SITE_FACTOR_MAX // BAND_SPAN - 2 - 30  # 30: the demo's four classes add 10 per class after the first
    site = parse_site(mutate(lambda d: d["policy"]["qos_tiers"][0].update(priority=top)))
    assert band_site_factor(top + 30 + 2) <= SITE_FACTOR_MAX
    with pytest.raises(SiteError):
        parse_site(mutate(lambda d: d["policy"]["qos_tiers"][0].update(priority=top + 1)))
    assert site.policy.qos_tiers[0].priority == top


def test_site_factor_limit_is_the_shims():
    lua = data_file("job_submit", "job_submit.lua").read_text()
    low, high = re.search(r"site_factor = \{\s*(-?\d+),\s*(-?\d+)\s*\}", lua).groups()
    assert int(high) == SITE_FACTOR_MAX and int(low) == -SITE_FACTOR_MAX


def test_rendered_configs_never_get_a_line_from_a_site_value():
    """Every value that passes the grammar renders on its own line: the line count does not depend on them."""
    site = parse_site(mutate(lambda d: (group(d, 0)["cpu"].update(model="Intel(R) Xeon(R) @ 2.1GHz"),
                                        group(d, 3)["gpu"].update(files="/dev/nvidia[0-3]"))))
    files = render_site(site)
    base = render_site(load_site("demo"))
    for name in ("slurm.conf", "gres.conf"):
        assert len(files[name].splitlines()) == len(base[name].splitlines())


def test_a_billion_nodes_is_refused_fast(tmp_path):
    f = tmp_path / "big.yaml"
    f.write_text(yaml.safe_dump(mutate(lambda d: group(d, 0).update(count=1_000_000_000))))
    t0 = time.perf_counter()
    with pytest.raises(SiteError, match="count: Input should be less than or equal to 65536"):
        load_site(f)
    assert time.perf_counter() - t0 < 2.0


@pytest.mark.parametrize("content,words", [
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4, "not UTF-8 text (byte"),
    ("name: demo\x00\n".encode(), "NUL byte on line 1"),
    ("name: d\u00e9mo\n".encode("latin-1"), "not UTF-8 text (byte 7 on line 1)"),
    (b"# padding\n" * 120_000, "larger than 1,048,576 bytes"),
    (b"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     b"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
     b"g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n", "once YAML aliases are expanded"),
])
def test_files_that_are_not_site_descriptions(tmp_path, content, words):
    f = tmp_path / "site.yaml"
    f.write_bytes(content)
    with pytest.raises(SiteError) as err:
        load_site(f)
    assert str(err.value).startswith(f"{f}: (top level): ") and words in str(err.value)
