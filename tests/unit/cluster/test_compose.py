"""The container cluster's layout and Compose file, computed from the site (pure: nothing runs here)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from slurm_plugin.cluster import compose as cc
from slurm_plugin.conf import render_site
from slurm_plugin.site import load_site

ROOT = Path("/var/lib/hetsched/containers")


def test_names_and_addresses_are_stable_and_unique_per_root():
    site = load_site("demo")
    p = cc.plan(site, ROOT, "bookworm", [])
    assert p == cc.plan(site, ROOT, "bookworm", [])
    assert cc.prefix_for(ROOT) != cc.prefix_for(Path("/other"))
    assert p.container("ctl") == f"{p.prefix}-ctl" and p.network == f"{p.prefix}-net"
    assert len(set(p.addrs.values())) == len(p.addrs) == 4 + site.node_count()  # db, dbd, ctl, hetsched
    assert p.addrs["db"].endswith(".2") and p.addrs["ctl"].endswith(".4") and p.addrs["x86n1"].endswith(".10")


def test_a_taken_subnet_is_skipped():
    site = load_site("demo")
    first = cc.plan(site, ROOT, "bookworm", []).subnet
    assert cc.plan(site, ROOT, "bookworm", [first]).subnet != first


def test_unknown_release_is_refused():
    with pytest.raises(cc.ComposeError, match="unknown release 'sid'"):
        cc.plan(load_site("demo"), ROOT, "sid", [])


def test_compose_file_has_a_service_per_node_with_its_devices():
    site = load_site("demo")
    p = cc.plan(site, ROOT, "trixie", [])
    doc = yaml.safe_load(cc.compose_text(cc.compose(site, p, {"alice": 2001}, Path("/c"))))
    assert set(doc["services"]) == {"db", "dbd", "ctl", "hetsched", *(h for g in site.node_groups for h in g.hostnames)}
    a100 = doc["services"]["a100n1"]
    assert a100["image"] == "localhost/hetsched-cluster:trixie" and a100["hostname"] == "a100n1"
    assert a100["environment"]["HETSCHED_DEVICES"] == "/dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3"
    assert a100["environment"]["HETSCHED_USERS"] == "alice:2001"
    assert a100["networks"]["net"]["ipv4_address"] == p.addrs["a100n1"]
    assert f"{ROOT}/etc:/etc/slurm:ro" in a100["volumes"]
    assert doc["networks"]["net"]["name"] == p.network
    assert doc["networks"]["net"]["ipam"]["config"][0]["subnet"] == p.subnet


def test_slurm_conf_has_accounting_and_node_addresses():
    site = load_site("demo")
    p = cc.plan(site, ROOT, "bookworm", [])
    conf = render_site(site, cc.layout(p))["slurm.conf"]
    assert f"SlurmctldHost=ctl({p.addrs['ctl']})" in conf
    assert f"AccountingStorageHost={p.addrs['dbd']}" in conf
    assert "AccountingStorageEnforce=associations,limits,qos" in conf
    assert "PriorityWeightFairshare=10000" in conf and "PriorityWeightQOS=10000" in conf
    assert f"NodeName=x86n1 NodeAddr={p.addrs['x86n1']} CPUs=16" in conf
    assert "PreemptType" not in conf  # the demo site's tiers preempt nothing


def test_write_only_writes_every_file_with_safe_modes(tmp_path):
    from slurm_plugin.cluster.containers import ContainerCluster

    state = ContainerCluster(tmp_path).write("demo", "trixie", ["alice"])
    etc = tmp_path / "etc"
    assert {"slurm.conf", "gres.conf", "slurmdbd.conf", "munge.key", "entry.sh", "hetsched-resume"} <= {
        f.name for f in etc.iterdir()}
    assert (etc / "slurmdbd.conf").stat().st_mode & 0o777 == 0o600
    assert (etc / "munge.key").stat().st_mode & 0o777 == 0o400
    assert "--backend" not in (etc / "hetsched-resume").read_text()  # the ctl container only hands it on
    doc = yaml.safe_load((tmp_path / "compose.yaml").read_text())
    assert doc["services"]["ctl"]["image"] == "localhost/hetsched-cluster:trixie"
    assert doc["services"]["db"]["image"] == "localhost/hetsched-cluster:bookworm"  # MariaDB 10.11 (DB_RELEASE)
    db_build, ctl_build = doc["services"]["db"]["build"], doc["services"]["ctl"]["build"]
    assert db_build["dockerfile"] == ctl_build["dockerfile"] == "Containerfile"
    assert db_build["args"]["BASE"] == "debian:bookworm" and ctl_build["args"]["BASE"] == "debian:trixie"
    assert "mariadb-server" in db_build["args"]["PACKAGES"].split()
    assert "mariadb-server" not in ctl_build["args"]["PACKAGES"].split()
    assert state["users"] == ["alice"] and "alice:2001" in doc["services"]["x86n1"]["environment"]["HETSCHED_USERS"]


def test_the_suite_container_shares_the_daemons_socket_with_slurmctld_and_can_be_left_out():
    site = load_site("demo")
    p = cc.plan(site, ROOT, "bookworm", [])
    doc = cc.compose(site, p, {}, Path("/c"), ["/src:/opt/hetsched:ro"], "--interval 5")
    suite, ctl = doc["services"]["hetsched"], doc["services"]["ctl"]
    assert suite["image"] == ctl["image"] == "localhost/hetsched-cluster:bookworm"  # one image, every role
    assert suite["environment"]["HETSCHED_ROLE"] == "suite" and ctl["environment"]["HETSCHED_ROLE"] == "ctl"
    assert p.images == ["bookworm"] and cc.plan(site, ROOT, "trixie", []).images == ["trixie", "bookworm"]
    assert suite["environment"]["HETSCHED_CYCLE_ARGS"] == "--interval 5"
    assert suite["environment"]["HETSCHED_CTL"] == f"{p.addrs['ctl']}:{site.slurm.slurmctld_port}"
    assert f"{ROOT}/run:/run/hetsched" in suite["volumes"] and f"{ROOT}/run:/run/hetsched" in ctl["volumes"]
    assert "/src:/opt/hetsched:ro" in suite["volumes"]
    files = render_site(site, cc.layout(p))
    assert "JobSubmitPlugins=lua" in files["slurm.conf"]
    assert '"socket": "/run/hetsched/hetsched.sock"' in files["hetsched-shim.json"]
    bare = cc.plan(site, ROOT, "bookworm", [], suite=False)
    assert "hetsched" not in bare.addrs and bare.images == ["bookworm"]
    assert "hetsched" not in cc.compose(site, bare, {}, Path("/c"))["services"]
    assert "JobSubmitPlugins" not in render_site(site, cc.layout(bare))["slurm.conf"]


def test_a_member_cluster_uses_the_other_clusters_network_and_slurmdbd():
    site = load_site("demo")
    host = cc.plan(site, ROOT, "bookworm", [])
    member = cc.plan(site, Path("/b"), "bookworm", [], member_of=host)
    assert (member.subnet, member.network, member.own_db) == (host.subnet, host.network, False)
    assert member.addrs["dbd"] == host.addrs["dbd"] and "db" not in member.services and "dbd" not in member.services
    own = {a for s, a in member.addrs.items() if s not in ("db", "dbd")}
    assert len(own) == len(member.addrs) - 2 and not own & set(host.addrs.values())
    assert f"AccountingStorageHost={host.addrs['dbd']}" in render_site(site, cc.layout(member))["slurm.conf"]
    doc = cc.compose(site, member, {}, Path("/c"))
    assert set(doc["services"]) == {"ctl", "hetsched", *member.nodes}
    assert member.images == ["bookworm"]
    assert doc["networks"]["net"] == {"name": host.network, "external": True}
    with pytest.raises(cc.ComposeError, match="release of"):
        cc.plan(site, Path("/b"), "trixie", [], member_of=host)
