"""System tests run against a real local Slurm cluster (slurmctld + one slurmd per node) on this host.

A test declares the cluster it needs (:class:`Needs`: site/nodes, job_submit shim, admission daemon,
accounting, Slurm overrides such as timeouts) and gets it from :func:`start_cluster` or a module fixture from
:func:`cluster_fixture`; the cluster lives under ``$HETSCHED_TEST_ROOT/<name>`` and its ports are assigned here
(:func:`allocate_ports`, from ``$HETSCHED_TEST_PORT_BASE``), never picked by hand, so no two clusters of one
test process collide and several test runs can share the machine. Every process a cluster started is stopped.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from slurm_plugin.cluster.local import LocalCluster
from slurm_plugin.site import SITE_CONFIGS, Site

TEST_ROOT = Path(os.environ.get("HETSCHED_TEST_ROOT", "/var/lib/hetsched/test"))
PORT_BASE = int(os.environ.get("HETSCHED_TEST_PORT_BASE", "17817"))
PORT_SPAN = 2000  # a test run owns PORT_BASE .. PORT_BASE + 1999
PORT_BLOCK = 20  # ports are handed out in blocks of this many (a demo cluster uses 11: slurmctld + 10 slurmd)
_ports_used = 0


@dataclass(frozen=True)
class Needs:
    """What a system test's cluster must have; :func:`start_cluster` builds exactly that.

    ``site``: the bundled site (its nodes); ``job_submit``: slurmctld loads the shim; ``daemon``: the admission
    daemon is started too (most shim tests run their own, to kill, hang or garble it); ``accounting``: slurmdbd
    accounting, which the local cluster does not run, so a test that needs it FAILS saying so (it is never
    skipped, a skip would read as a pass); ``policy``: keys replacing the site's ``policy`` keys; ``slurm``:
    keys replacing the site's ``slurm`` keys (``suspend_timeout``, ``resume_timeout``...; not the ports);
    ``patch``: a function that edits the site file's data in place (node groups, partitions, ``deploy``) given
    the cluster's root, after the overrides."""

    site: str = "demo"
    job_submit: bool = False
    daemon: bool = False
    accounting: bool = False
    policy: Mapping[str, object] = field(default_factory=dict)
    slurm: Mapping[str, object] = field(default_factory=dict)
    patch: Callable[[dict, Path], None] | None = None


def _bindable(first: int, count: int) -> bool:
    """Whether every port of ``first .. first + count - 1`` can be bound on loopback now (as LocalCluster.up checks)."""
    for port in range(first, first + count):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def allocate_ports(count: int = PORT_BLOCK) -> int:
    """The first of ``count`` consecutive ports that no other cluster of this test process was given and that are
    free now: a block held by something else (a leftover process, or an outgoing connection's ephemeral port when
    the base lies in the kernel's ip_local_port_range, 32768-60999 by default) is passed over."""
    global _ports_used
    blocks = -(-count // PORT_BLOCK)
    while True:
        if _ports_used + blocks * PORT_BLOCK > PORT_SPAN:
            raise RuntimeError(f"test ports exhausted: {_ports_used} of PORT_BASE={PORT_BASE}..+{PORT_SPAN} used, "
                               f"{count} more asked; raise PORT_SPAN or give the run its own HETSCHED_TEST_PORT_BASE")
        first = PORT_BASE + _ports_used
        _ports_used += blocks * PORT_BLOCK
        if _bindable(first, count):
            return first


def accounting_missing() -> str | None:
    """Why this machine's test clusters have no Slurm accounting (None once they do)."""
    why = "the local test cluster (slurm_plugin/cluster/local.py) starts no slurmdbd"
    return why if shutil.which("slurmdbd") else why + " and slurmdbd is not installed"


def start_cluster(name: str, needs: Needs | None = None, **kw) -> LocalCluster:
    """Bring up ``needs`` (cold start) under TEST_ROOT/name on freshly assigned ports.

    Keywords are shorthand: ``Needs`` fields (``job_submit=True``) and anything else as a ``slurm`` override
    (``suspend_timeout=10``)."""
    if (needs is not None and not isinstance(needs, Needs)) or {"port_offset", "slurmctld_port", "slurmd_port"} & set(kw):
        raise TypeError(f"start_cluster({name!r}): declare a Needs (second argument); ports are assigned here "
                        "(allocate_ports), not picked by hand")
    fields = {f.name for f in dataclasses.fields(Needs)}
    needs = dataclasses.replace(needs or Needs(), **{k: v for k, v in kw.items() if k in fields})
    if extra := {k: v for k, v in kw.items() if k not in fields}:
        needs = dataclasses.replace(needs, slurm={**needs.slurm, **extra})
    if needs.accounting and (why := accounting_missing()):
        pytest.fail(f"cluster {name!r} needs Slurm accounting, but {why}: this test cannot pass here "
                    "(it fails on purpose instead of skipping)", pytrace=False)
    root = TEST_ROOT / name
    root.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((SITE_CONFIGS / f"{needs.site}.yaml").read_text())
    ctld_port = allocate_ports(1 + Site.model_validate(data).node_count())
    data["slurm"].update(needs.slurm)
    data["slurm"].update(cluster_name=f"hs-test-{name}", slurmctld_port=ctld_port, slurmd_port=ctld_port + 1)
    data["policy"].update(needs.policy)
    if needs.patch:
        needs.patch(data, root)
    site_file = root / "site.yaml"
    site_file.write_text(yaml.safe_dump(data, sort_keys=False))
    cluster = LocalCluster(root)
    cluster.down()  # a previous run that died leaves nothing behind
    cluster.up(site_file, job_submit=needs.job_submit, daemon=needs.daemon)
    return cluster


def cluster_fixture(name: str, needs: Needs | None = None, scope: str = "module", **kw):
    """A fixture (module-scoped by default): the cluster ``start_cluster(name, needs, **kw)``, down at the end."""

    @pytest.fixture(scope=scope)
    def fixture() -> Iterator[LocalCluster]:
        c = start_cluster(name, needs, **kw)
        yield c
        c.down()

    return fixture


module_cluster = cluster_fixture  # the chaos tests' name for it


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    """The demo site on a real local Slurm cluster, no job_submit plugin."""
    c = start_cluster("plain", Needs(slurm={"suspend_timeout": 10}))
    yield c
    c.down()


@pytest.fixture(scope="session")
def slurm(cluster: LocalCluster):
    """A SlurmClient for the ``cluster`` fixture."""
    return cluster.client()
