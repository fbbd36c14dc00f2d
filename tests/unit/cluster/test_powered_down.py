"""The many-node powered-down local site: its rendered config, the bootable list, the queue filler's plan, and the
Slurm command timeout knob (the live parts are tests/system/test_powered_down_site.py)."""

from __future__ import annotations

import json
import re

import pytest

from slurm_plugin.cluster.queue_fill import LARGE_SHAPES, plan_counts
from slurm_plugin.conf import render_site
from slurm_plugin.conf.render import LocalLayout
from slurm_plugin.power.base import PowerError
from slurm_plugin.power.local import LocalPower
from slurm_plugin.site import load_site, resolve_site_path
from slurm_plugin.slurm.client import TIMEOUT_ENV, SlurmClient, default_timeout


@pytest.fixture(scope="module")
def large():
    return load_site(resolve_site_path("large"))


def test_powered_down_render_keeps_every_node_few_ports_and_one_gres_line_per_group(large, tmp_path):
    files = render_site(large, LocalLayout.under(tmp_path, large, powered_down=True, port_span=100))
    nodes = [line for line in files["slurm.conf"].splitlines() if line.startswith("NodeName=")]
    assert len(nodes) == 2240 and all(line.endswith("State=CLOUD") for line in nodes)
    ports = {int(re.search(r" Port=(\d+)", line)[1]) for line in nodes}
    addrs = [re.search(r"NodeAddr=(\S+)", line)[1] for line in nodes]
    assert len(ports) == 100 and len(set(addrs)) == 2240 and all(a.startswith("127.") for a in addrs)
    assert "\nPrivateData=cloud\n" in files["slurm.conf"]
    gres = [line for line in files["gres.conf"].splitlines() if line.startswith("NodeName=")]
    assert len(gres) == sum(1 for g in large.node_groups if g.gpu or g.accelerators)
    assert "NodeName=usg[001-096] Name=gpu Type=a100" in files["gres.conf"]


def test_default_render_is_unchanged_one_port_per_node_on_127_0_0_1(large, tmp_path):
    files = render_site(large, LocalLayout.under(tmp_path, large))
    nodes = [line for line in files["slurm.conf"].splitlines() if line.startswith("NodeName=")]
    assert all("NodeAddr=127.0.0.1 " in line and line.endswith("State=UNKNOWN") for line in nodes)
    assert len({re.search(r" Port=(\d+)", line)[1] for line in nodes}) == 2240
    assert "PrivateData" not in files["slurm.conf"]
    assert sum(line.startswith("NodeName=usg") for line in files["gres.conf"].splitlines()) == 96


def test_local_power_boots_only_the_bootable_nodes(tmp_path):
    (tmp_path / "cluster.json").write_text(json.dumps({"slurmd_ports": {"a1": 1, "a2": 2}, "bootable": ["a1"]}))
    with pytest.raises(PowerError, match="not bootable on this host"):
        LocalPower(tmp_path).power("a2", True)


def test_queue_plan_adds_up_to_the_total():
    for total in (1, 999, 100000):
        counts = plan_counts(total, LARGE_SHAPES)
        assert sum(counts) == total and min(counts) >= 0


def test_slurm_timeout_from_the_environment(monkeypatch):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert default_timeout() == 30 and SlurmClient("/x").timeout == 30
    monkeypatch.setenv(TIMEOUT_ENV, "600")
    assert SlurmClient("/x").timeout == 600 and SlurmClient("/x", timeout=5).timeout == 5
    monkeypatch.setenv(TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match=TIMEOUT_ENV):
        default_timeout()
