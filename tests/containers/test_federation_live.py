"""Federation on the real container clusters: two more Slurm clusters, ``fed-a`` and ``fed-b`` (one node each,
cut from the demo site), both members of the session cluster's accounting (its MariaDB and slurmdbd), joined by
``sacctmgr add federation``. A job submitted to A with both clusters allowed (no ``-M``: a federated job may
run on every member) starts on B when A is full, as a sibling job; with A's controller stopped, new work
submitted from A's side with ``-M fed-a,fed-b`` runs on B. A runs the suite (its admission daemon behind its
slurmctld's job_submit.lua) with the federation in its site file, B's time zone at local night and A's at
day: a portable job submitted to A while both are idle runs on B (follow-the-sun, admission/federation.py)."""

from __future__ import annotations

import datetime as dt

import pytest
import yaml

from slurm_plugin.cluster.containers import ContainerCluster, ContainerSlurmClient
from slurm_plugin.conf.accounting import apply_site, federate
from slurm_plugin.daemon.process import ask
from slurm_plugin.site import load_site, resolve_site_path
from slurm_plugin.slurm import SlurmError
from tests.containers.conftest import POLICY, RELEASE, TEST_ROOT, until

pytestmark = pytest.mark.containers
FEDERATION = "hetsched-fed"
JOB = ("-D", "/tmp", "-o", "/dev/null", "--exclusive")


def _small_site(name: str, prefix: str) -> dict:
    """The demo site cut to one x86 node in one partition (batch), as cluster ``name``."""
    doc = yaml.safe_load(resolve_site_path("demo").read_text())
    doc["name"] = doc["slurm"]["cluster_name"] = name
    groups = doc["clusters"][0]["node_groups"]
    doc["clusters"][0]["node_groups"] = [dict(g, prefix=prefix, count=1) for g in groups if g["name"] == "cpu-x86"]
    doc["partitions"] = [{"name": "batch", "node_groups": ["cpu-x86"], "default": True, "max_time": "1-00:00:00"}]
    doc["policy"].pop("reshapes", None)
    return doc


def _zone_at(local_hour: int) -> str:
    """A fixed-offset zone whose local time is now ``local_hour``:MM (``Etc/GMT-N`` is UTC+N)."""
    offset = (local_hour - dt.datetime.now(dt.timezone.utc).hour + 12) % 24 - 12
    return f"Etc/GMT{-offset:+d}" if offset else "Etc/GMT"


@pytest.fixture(scope="module")
def fed(cluster):
    """Clusters A and B (A a member of the session cluster's accounting, B of A's, so B's addresses follow
    A's), their sacctmgr setup and the federation; both taken down at the end (containers by id). A runs the
    suite, its site naming the federation with A at 13:MM local time and B at 01:MM."""
    members = {}
    federation = {"name": FEDERATION, "refresh_s": 2,
                  "members": [{"cluster": "fed-a", "timezone": _zone_at(13)},
                              {"cluster": "fed-b", "timezone": _zone_at(1)}]}
    try:
        for name, prefix, host in (("fed-a", "fa", cluster.root), ("fed-b", "fb", TEST_ROOT / "containers-fed-a")):
            root = TEST_ROOT / f"containers-{name}"
            (root / "etc").mkdir(parents=True, exist_ok=True)
            suite = name == "fed-a"
            (root / "site.yaml").write_text(yaml.safe_dump({**_small_site(name, prefix),
                                                            **({"federation": federation} if suite else {})}))
            (root / "etc" / "policy.yaml").write_text(POLICY)
            members[name] = c = ContainerCluster(root)
            c.up(str(root / "site.yaml"), release=RELEASE, wait=180, suite=suite, member_of=host,
                 cycle_args="--interval 5 --policy-file /etc/slurm/policy.yaml")
            apply_site(c.client(), load_site(root / "site.yaml"))
        federate(members["fed-a"].client(), FEDERATION, list(members))
        for c in members.values():  # each controller hears of the federation from slurmdbd
            assert until(lambda c=c: _fed_active(c.client()), 60, 1), \
                c.client().run("scontrol", "show", "federation").stdout
        yield members
    finally:
        for c in reversed(members.values()):
            c.down()


@pytest.fixture(autouse=True)
def _no_jobs_left(fed):
    """Each test ends with no job on a running member (a failed test leaves no node taken)."""
    yield
    for c in fed.values():
        if c.container_states().get("ctl", ("", ""))[1] == "running":
            client = c.client()
            client.cancel(*map(int, client.run("squeue", "--local", "-h", "-o", "%A", check=False).stdout.split()))


def _fed_active(client) -> bool:
    out = client.run("scontrol", "show", "federation", check=False).stdout
    return FEDERATION in out and "fed-a" in out and "fed-b" in out and "Synced:Yes" in out


def _running_where(client, job: int) -> str | None:
    """The node a job runs on in this client's own cluster (``--local``: scontrol and squeue would otherwise
    show the origin cluster's record, REVOKED once a sibling started); None while it does not run there."""
    out = client.run("squeue", "--local", "-h", "-j", str(job), "-o", "%T %N", check=False).stdout.split()
    return out[1] if len(out) == 2 and out[0] == "RUNNING" else None


def test_setup_is_idempotent(fed):
    assert federate(fed["fed-a"].client(), FEDERATION, ["fed-b", "fed-a"], dry_run=True) == []


def test_a_job_for_a_full_cluster_starts_on_the_other(fed):
    a, b = fed["fed-a"].client(), fed["fed-b"].client()
    blocker = a.sbatch("-M", "fed-a", *JOB, wrap="sleep 300")  # only A may run it: A's one node is full
    assert until(lambda: _running_where(a, blocker), 60, 0.5) == "fa1"
    job = a.sbatch(*JOB, wrap="sleep 300")  # submitted to A; a federated job may run on every cluster
    assert until(lambda: _running_where(b, job), 60, 0.5) == "fb1"
    # A, the origin, revoked its own sibling when B's started (its scontrol shows REVOKED on 22.05, the running
    # sibling's record on 24.11)
    origin = a.show_job(job)
    assert (origin["FedOrigin"], origin["FedActiveSiblings"]) == ("fed-a", "fed-b") and not _running_where(a, job)


def test_follow_the_sun_sends_portable_work_to_the_member_at_night(fed):
    a, b = fed["fed-a"].client(), fed["fed-b"].client()
    probe = {"min_cpus": 1}  # the daemon has its snapshot and has read both members: it prefers B (night)
    assert until(lambda: ask(fed["fed-a"].socket, probe).get("set", {}).get("clusters") == "fed-b", 120, 1), \
        ask(fed["fed-a"].socket, probe)
    job = a.sbatch(*JOB, wrap="sleep 300")  # both members idle; A, the origin, would start it itself
    assert until(lambda: _running_where(b, job), 60, 0.5) == "fb1"
    assert not _running_where(a, job)
    origin = a.show_job(job)  # admission's clusters=fed-b made B the only viable sibling (else: fed-a,fed-b)
    assert (origin["FedOrigin"], origin["FedViableSiblings"]) == ("fed-a", "fed-b"), origin


def test_with_a_stopped_new_work_runs_on_b(fed):  # last: A's controller stays stopped
    cid = fed["fed-a"].state()["containers"]["ctl"]
    fed["fed-a"].podman("stop", "-t", "10", cid, timeout=60)
    # a client on A's side (its node's container: A's slurm.conf, munge) with both clusters allowed
    login = ContainerSlurmClient(fed["fed-a"].plan().container("fa1"), fed["fed-a"].engine_env)
    with pytest.raises(SlurmError, match="Unable to contact slurm controller"):
        login.sbatch(*JOB, wrap="true")  # A alone cannot take it
    # sbatch asks each allowed cluster (their controllers' addresses come from slurmdbd): A does not answer
    job = login.sbatch("-M", "fed-a,fed-b", *JOB, wrap="sleep 300")
    assert until(lambda: _running_where(fed["fed-b"].client(), job), 60, 0.5) == "fb1"

