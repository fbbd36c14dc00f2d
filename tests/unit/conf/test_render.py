"""Generated slurm.conf / gres.conf: golden files for the bundled sites, and atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cluster import compose
from slurm_plugin.conf import DeployPaths, LocalLayout, render_site, write_atomic
from slurm_plugin.site import SITE_CONFIGS, load_site

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("HETSCHED_UPDATE_GOLDEN") == "1"
REFRESH = "HETSCHED_UPDATE_GOLDEN=1 python -m pytest tests/unit/conf/test_render.py"


def _variants():
    for name in ("demo", "large"):
        yield name, "deploy", lambda site: DeployPaths()
    # the health check (HealthCheckProgram, its interval, RebootProgram) of a site that sets an interval
    yield "demo", "deploy-health", lambda site: DeployPaths()
    yield "demo", "local", lambda site: LocalLayout.under("/var/lib/hetsched/cluster", site)
    yield "demo", "containers", lambda site: compose.layout(compose.plan(site, Path("/var/lib/hetsched/containers"),
                                                                         "bookworm", []))


@pytest.mark.parametrize("site_name,variant,layout", list(_variants()), ids=lambda v: v if isinstance(v, str) else "")
def test_golden(site_name, variant, layout):
    site = load_site(site_name)
    if variant.endswith("-health"):
        site = site.model_copy(update={"slurm": site.slurm.model_copy(update={"health_check_interval": 300})})
    files = render_site(site, layout(site))
    folder = GOLDEN / f"{site_name}-{variant}"
    if UPDATE:
        write_atomic(folder, files)
    for name, text in files.items():
        golden = folder / name
        assert golden.exists(), f"missing golden file {golden}; create it with: {REFRESH}"
        assert text == golden.read_text(), (
            f"{name} for {site_name} ({variant}) differs from {golden}.\n"
            f"If the change is intended, refresh the golden files with: {REFRESH}\nand review `git diff`.")


def _deploy_site(root: str = "/var/lib/hetsched/deploy"):
    """The demo site with the deployment parts the system tests use (image store, sensitive group, classes)."""
    import yaml

    from slurm_plugin.deploy.site_patch import patch_site
    from slurm_plugin.site import parse_site

    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    patch_site(data, Path(root))
    return parse_site(data, "demo-deploy.yaml")


def test_golden_fragments_of_a_site_that_deploys():
    """What `hetsched conf render` writes into a real site's set for a site with deploy settings: the fragments
    (deploy.conf with Prolog/Epilog among them) and oci.conf for Slurm 22.05 (the programs hold this host's
    interpreter path: checked by test_merge, not here)."""
    from slurm_plugin.conf.merge import merge_layout
    from slurm_plugin.conf.render import render_fragments
    from slurm_plugin.deploy.programs import deploy_files

    site = _deploy_site()
    layout = merge_layout(Path("/etc/slurm"), "/run/hetsched/hetsched.sock")
    files = render_fragments(site, layout, sets_dir="/etc/slurm/hetsched.d")
    etc, programs = deploy_files(site, layout, "/etc/slurm/slurm.conf", layout.log_dir, version=(22, 5))
    files.update(etc)
    assert sorted(programs) == ["epilog", "oci-run", "prolog"]
    folder = GOLDEN / "demo-sensitive-fragments"
    if UPDATE:
        write_atomic(folder, files)
    assert sorted(p.name for p in folder.iterdir()) == sorted(files), f"golden files differ in name; {REFRESH}"
    for name, text in files.items():
        assert text == (folder / name).read_text(), (
            f"{name} of the deploying site differs from {folder / name}.\n"
            f"If the change is intended, refresh the golden files with: {REFRESH}\nand review `git diff`.")
    assert "Prolog=/etc/slurm/hetsched/prolog\nEpilog=/etc/slurm/hetsched/epilog\n" in files["deploy.conf"]
    assert 'RunTimeRun="/etc/slurm/hetsched/oci-run %b %n.%u.%j.%s.%t"' in files["oci.conf"]
    # a site without deployment has no deploy.conf (its Include block stays as it was)
    assert "deploy.conf" not in render_fragments(load_site("demo"), layout)


def test_features_and_typed_gres():
    site = load_site("demo")
    files = render_site(site)
    conf, gres = files["slurm.conf"], files["gres.conf"]
    assert "NodeName=armn[1-3] " in conf and "Features=aarch64,eu-west" in conf
    assert "Gres=gpu:a100:4" in conf and "Gres=npu:ascend910b:8" in conf and "Gres=dpu:bluefield3:1" in conf
    assert "GresTypes=gpu,npu,dpu" in conf
    assert "NodeName=a100n1 Name=gpu Type=a100 File=/dev/nvidia[0-3]" in gres
    assert "NodeName=npun1 Name=npu Type=ascend910b File=/dev/davinci[0-7]" in gres
    large = render_site(load_site("large"))["gres.conf"]
    assert "AutoDetect=nvml Name=gpu Type=a100" in large
    assert "AutoDetect=rsmi Name=gpu Type=mi250x File=/dev/dri/renderD[128-131]" in large
    assert "Name=gpu Type=max1550 File=/dev/dri/renderD[128-131]" in large


def test_cheaper_nodes_get_lower_weight():
    site = load_site("demo")
    conf = render_site(site)["slurm.conf"]
    weight = {line.split()[0].split("=")[1]: int(line.split("Weight=")[1].split()[0])
              for line in conf.splitlines() if line.startswith("NodeName=")}
    assert weight["rvn1"] < weight["armn[1-3]"] < weight["x86n[1-2]"] < weight["gh200n1"]


def test_write_atomic_leaves_directory_as_it_was_on_failure(tmp_path: Path):
    (tmp_path / "slurm.conf").write_text("old\n")
    files = {"slurm.conf": "new\n", "missing-dir/gres.conf": "x"}  # the second fails while staging
    with pytest.raises(OSError):
        write_atomic(tmp_path, files)
    assert (tmp_path / "slurm.conf").read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["slurm.conf"], "temporary files left behind"


def test_cli_render_refuses_invalid_site_and_writes_nothing(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((SITE_CONFIGS / "demo.yaml").read_text().replace("count: 3", "count: -3"))
    out = tmp_path / "out"
    out.mkdir()
    (out / "slurm.conf").write_text("old\n")
    result = CliRunner().invoke(main, ["conf", "render", str(bad), "-o", str(out)])
    assert result.exit_code == 2
    assert f"{bad}: clusters[0].node_groups[1].count: Input should be greater than 0" in result.output
    assert [p.name for p in out.iterdir()] == ["slurm.conf"] and (out / "slurm.conf").read_text() == "old\n"


def test_cli_render_into_an_empty_directory_creates_a_slurm_conf_that_includes_the_set(tmp_path: Path):
    result = CliRunner().invoke(main, ["conf", "render", "demo", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gres.conf", "hetsched", "hetsched-shim.json",
                                                          "hetsched.d", "job_submit.lua", "slurm.conf"]
    conf = (tmp_path / "slurm.conf").read_text()
    assert "ClusterName=hetsched-demo" in conf and f"Include {tmp_path}/hetsched/nodes.conf" in conf
    assert "NodeName=" not in conf and "GresTypes" not in conf and "ResumeProgram" not in conf


def test_node_addr_and_values_slurm_conf_cannot_hold():
    from slurm_plugin.conf.render import ConfValueError, conf_value
    from slurm_plugin.site import parse_site
    import yaml

    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["clusters"][0]["node_groups"][1]["node_addr"] = "{node}-ib"
    conf = render_site(parse_site(data))["slurm.conf"]
    assert "NodeName=armn[1-3] NodeAddr=armn1-ib,armn2-ib,armn3-ib CPUs=64 " in conf
    assert conf_value("/etc/slurm/x") == "/etc/slurm/x" and conf_value("/a b/x") == '"/a b/x"'
    for bad in ("/a\nPrologSlurmctld=/tmp/evil", "/a#b", '/a"b'):
        with pytest.raises(ConfValueError, match="cannot be written into slurm.conf"):
            conf_value(bad)


def test_a_site_without_gres_has_no_empty_gres_types_line():
    """slurmctld 22.05 refuses ``GresTypes=`` with nothing after it (a parse error: it does not start)."""
    import yaml

    from slurm_plugin.site import resolve_site_path
    from slurm_plugin.site.loader import parse_site

    doc = yaml.safe_load(resolve_site_path("demo").read_text())
    doc["clusters"][0]["node_groups"] = [g for g in doc["clusters"][0]["node_groups"] if g["name"] == "cpu-x86"]
    doc["partitions"] = [{"name": "batch", "node_groups": ["cpu-x86"], "default": True}]
    doc["policy"].pop("reshapes", None)
    conf = render_site(parse_site(doc, "no-gres.yaml"))["slurm.conf"]
    assert "GresTypes" not in conf


def test_the_container_cluster_gets_no_node_programs_it_cannot_run():
    """Its node image has no Python: a Prolog= there fails every job's Prolog (node drained, job requeued)."""
    site = _deploy_site()
    local = render_site(site, LocalLayout.under("/var/lib/hetsched/cluster", site))["slurm.conf"]
    assert "Prolog=/var/lib/hetsched/cluster/bin/prolog" in local
    containers = render_site(site, compose.layout(compose.plan(site, Path("/var/lib/hetsched/containers"),
                                                               "trixie", [])))["slurm.conf"]
    assert "Prolog=" not in containers and "Epilog=" not in containers
