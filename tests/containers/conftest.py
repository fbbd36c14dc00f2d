"""The container cluster's system tests (`make test-containers`; not part of `make test`, see the README).

One cluster for the session, from a copy of the demo site with a grant (alice may run ai-training, i.e. Gold
work; bob only the default class), ``priority_max_age`` of 5 minutes (so the age factor shows within seconds)
and two users, with the suite's container (admission daemon behind slurmctld's job_submit.lua, cycle); it
lives under ``$HETSCHED_TEST_ROOT/containers`` and is taken down at the end (containers by
id). ``HETSCHED_CONTAINER_RELEASE`` picks the Debian release (bookworm: Slurm 22.05, trixie: 24.11). Runs only
with ``HETSCHED_CONTAINER_TESTS=1`` (the make target sets it), as root, with podman.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from slurm_plugin.cluster.containers import ContainerCluster
from slurm_plugin.conf.accounting import apply_site
from slurm_plugin.site import load_site, resolve_site_path
from tests.waiting import until  # noqa: F401 (the container tests import it from here)

TEST_ROOT = Path(os.environ.get("HETSCHED_TEST_ROOT", "/var/lib/hetsched/test"))
RELEASE = os.environ.get("HETSCHED_CONTAINER_RELEASE", "bookworm")
USERS = ["alice", "bob"]
POLICY = """ranking: {name: sjf, age_floor: false}
packing: {enabled: false}
scaling: {name: always-on}
reshape: false
steps: [rank]
"""


def bring_up(c: ContainerCluster) -> dict:
    """``up`` as the session's cluster is started (idempotent: a test that broke the cluster brings it back so)."""
    return c.up(str(c.root / "site.yaml"), release=RELEASE, users=USERS, wait=180,
                cycle_args="--interval 5 --policy-file /etc/slurm/policy.yaml")


def crash(c: ContainerCluster) -> None:
    """What a host crash does to the cluster: SIGKILL each container's conmon, then its init (its whole pid
    namespace), then the power relay; Podman records no exit."""
    ids = [cid for cid, _ in c.container_states().values()]
    for pid in c.podman("inspect", "--format", "{{.State.ConmonPid}} {{.State.Pid}}", *ids).stdout.split():
        os.kill(int(pid), signal.SIGKILL)
    if relay := c.state().get("relay_pid"):
        os.kill(relay, signal.SIGKILL)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``host_crash`` run last: they kill the session cluster's containers (and bring it back)."""
    items.sort(key=lambda item: item.get_closest_marker("host_crash") is not None)


@pytest.fixture(scope="session")
def cluster() -> ContainerCluster:
    root = TEST_ROOT / "containers"
    root.mkdir(parents=True, exist_ok=True)
    doc = yaml.safe_load(resolve_site_path("demo").read_text())
    doc["policy"]["grants"] = [{"users": ["alice"], "classes": ["ai-training"]}]
    doc["slurm"]["priority_max_age"] = "5:00"
    site_file = root / "site.yaml"
    site_file.write_text(yaml.safe_dump(doc))
    c = ContainerCluster(root)
    t0 = time.monotonic()
    # the suite's cycle every 5 s with a policy file (etc/ is mounted at /etc/slurm): SJF levels as SiteFactor
    # (equal limits share a level, so tier bands and fair-share still order the other tests' jobs), no power
    # actions or reshaping under the other tests
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc" / "policy.yaml").write_text(POLICY)
    state = bring_up(c)
    apply_site(c.client(), load_site(site_file), state["users"])
    print(f"container cluster up in {time.monotonic() - t0:.0f} s ({RELEASE}, Slurm {state['slurm_version']})")
    yield c
    c.down()
    prefix = c.state()["prefix"]  # down leaves none of the cluster's Podman objects (a kept pod holds a lock)
    for kind, name in (("container", c.plan().container("ctl")), ("pod", f"pod_{prefix}"), ("network", f"{prefix}-net")):
        assert c.podman(kind, "exists", name, check=False).returncode == 1, f"{kind} {name} is left after down"
