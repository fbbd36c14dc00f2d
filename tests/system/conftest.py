"""System tests run against a real local Slurm cluster (slurmctld + one slurmd per node) on this host.

Each fixture below brings up its own cluster of the demo site under ``$HETSCHED_TEST_ROOT/<name>`` with its own
ports (from ``$HETSCHED_TEST_PORT_BASE``), so several test runs can share the machine, and stops every process it
started at the end of the session.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from slurm_plugin.cluster.local import LocalCluster
from slurm_plugin.site import SITE_CONFIGS

TEST_ROOT = Path(os.environ.get("HETSCHED_TEST_ROOT", "/var/lib/hetsched/test"))
PORT_BASE = int(os.environ.get("HETSCHED_TEST_PORT_BASE", "17817"))
# Clusters that do not name a port offset get the next free block (a demo cluster uses 12 ports).
_AUTO_OFFSETS = itertools.count(1000, 20)


def start_cluster(name: str, port_offset: int | None = None, job_submit: bool = False, site: str = "demo",
                  daemon: bool = False, policy: dict | None = None, **slurm_overrides) -> LocalCluster:
    """Bring up the bundled ``site`` under TEST_ROOT/name with ports PORT_BASE+port_offset.. (cold start).

    With ``job_submit`` slurmctld loads the shim; the admission daemon is only started with ``daemon`` (most
    tests run their own, to kill, hang or garble it). ``policy`` keys replace the site's ``policy`` keys.
    Without ``port_offset`` the cluster gets the next unused block of ports of this test process."""
    if port_offset is None:
        port_offset = next(_AUTO_OFFSETS)
    root = TEST_ROOT / name
    root.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((SITE_CONFIGS / f"{site}.yaml").read_text())
    data["slurm"].update(cluster_name=f"hs-test-{name}", slurmctld_port=PORT_BASE + port_offset,
                         slurmd_port=PORT_BASE + port_offset + 1, **slurm_overrides)
    data["policy"].update(policy or {})
    site_file = root / "site.yaml"
    site_file.write_text(yaml.safe_dump(data, sort_keys=False))
    cluster = LocalCluster(root)
    cluster.down()  # a previous run that died leaves nothing behind
    cluster.up(site_file, job_submit=job_submit, daemon=daemon)
    return cluster


def module_cluster(name: str, port_offset: int | None = None, **kwargs):
    """A module-scoped fixture: the cluster ``start_cluster(name, port_offset, **kwargs)``, down at the end."""

    @pytest.fixture(scope="module")
    def fixture() -> Iterator[LocalCluster]:
        c = start_cluster(name, port_offset, **kwargs)
        yield c
        c.down()

    return fixture


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    """The demo site on a real local Slurm cluster, no job_submit plugin."""
    c = start_cluster("plain", 0, suspend_timeout=10)
    yield c
    c.down()


@pytest.fixture(scope="session")
def slurm(cluster: LocalCluster):
    """A SlurmClient for the ``cluster`` fixture."""
    return cluster.client()
