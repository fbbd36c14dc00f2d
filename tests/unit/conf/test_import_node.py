"""`hetsched conf import-node`: real CPU/memory/GRES from `slurmd -C` into a site file."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.conf.import_node import parse_slurmd_c
from slurm_plugin.site import SITE_CONFIGS, load_site

A100 = ("NodeName=a100n1 CPUs=64 Boards=1 SocketsPerBoard=2 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=515000 "
        "Gres=gpu:a100:8(S:0-1)\nUpTime=12-01:02:03\n")


def test_parse_rounds_memory_down_and_reads_gres():
    node = parse_slurmd_c(A100)
    assert (node.cores, node.sockets, node.threads_per_core, node.memory_gb) == (32, 2, 2, 502)
    assert node.gres == (("gpu", "a100", 8),)
    with pytest.raises(ValueError, match="no 'NodeName=...' line"):
        parse_slurmd_c("UpTime=1\n")
    with pytest.raises(ValueError, match="lacks RealMemory"):
        parse_slurmd_c("NodeName=x CPUs=2 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1\n")


def test_without_a_site_prints_a_group_to_paste():
    result = CliRunner().invoke(main, ["conf", "import-node"], input="NodeName=arm07 CPUs=2 Boards=1 "
                                "SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105\n")
    assert result.exit_code == 0, result.output
    assert "- name: arm\n" in result.output and "memory_gb: 23" in result.output
    assert "cpu: {arch: x86_64, cores: 2, sockets: 1, threads_per_core: 1}" in result.output


def test_write_updates_only_that_group_and_keeps_comments(tmp_path: Path):
    site = tmp_path / "site.yaml"
    original = (SITE_CONFIGS / "demo.yaml").read_text()
    site.write_text(original)
    shown = CliRunner().invoke(main, ["conf", "import-node", "--site", str(site), "--group", "gpu-a100"], input=A100)
    assert shown.exit_code == 0 and "memory_gb: 502" in shown.output and site.read_text() == original
    result = CliRunner().invoke(main, ["conf", "import-node", "--site", str(site), "--group", "gpu-a100", "--write"],
                                input=A100)
    assert result.exit_code == 0, result.output
    new = site.read_text()
    changed = [(a, b) for a, b in zip(original.splitlines(), new.splitlines()) if a != b]
    assert len(original.splitlines()) == len(new.splitlines()) and len(changed) == 3, changed
    assert "# The embedded default site" in new and "# follow-the-sun" in new
    group = load_site(site).group("gpu-a100")
    assert (group.cpu.cores, group.cpu.threads_per_core, group.memory_gb, group.gpu.count) == (32, 2, 502, 8)
    assert [p.read_text() for p in tmp_path.glob("site.yaml.hetsched-*.bak")] == [original]


def test_unknown_group_and_unknown_accelerator_are_refused(tmp_path: Path):
    site = tmp_path / "site.yaml"
    site.write_text((SITE_CONFIGS / "demo.yaml").read_text())
    result = CliRunner().invoke(main, ["conf", "import-node", "--site", str(site), "--group", "nope"], input=A100)
    assert result.exit_code == 1 and "no node group named 'nope'" in result.output
    npu = A100.replace("gpu:a100:8(S:0-1)", "npu:ascend910b:8")
    result = CliRunner().invoke(main, ["conf", "import-node", "--site", str(site), "--group", "cpu-x86"], input=npu)
    assert result.exit_code == 1 and "has no 'npu' accelerator" in result.output
