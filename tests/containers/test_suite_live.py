"""The suite inside the container cluster: slurmctld's real job_submit.lua asks the admission daemon in the
suite's container (a socket shared by the two containers), the daemon serves Prometheus metrics on the
cluster's network, the cycle steers the same slurmctld, and admission grants a class by the user's slurmdbd
associations (read from the real slurmdbd), not by what the job claims."""

from __future__ import annotations

import json
import urllib.request

import pytest

from slurm_plugin.daemon.process import ask
from slurm_plugin.site.priority import BAND_SPAN
from tests.waiting import until

pytestmark = pytest.mark.containers
QUIET = ("-D", "/tmp", "-o", "/dev/null")
WEB_STEP, WEB_BAND = 10, 510  # class web (3rd of 4 classes: +10) in tier bronze (0) / its own tier silver (500)


def _submit(client, *args: str) -> tuple[int, str]:
    """sbatch as the client's user; (job id, what the shim told the user on stderr)."""
    proc = client.run("sbatch", "--parsable", *QUIET, *args)
    return int(proc.stdout.strip().split(";")[0]), proc.stderr


@pytest.fixture(autouse=True)
def _no_jobs_left(cluster):
    yield
    root = cluster.client()
    root.cancel(*map(int, root.run("squeue", "-h", "-o", "%A").stdout.split()))


def _answered(cluster) -> float:
    """The daemon's hetsched_admission_requests_total, summed over decisions (its Prometheus endpoint)."""
    text = urllib.request.urlopen(cluster.metrics_url(), timeout=10).read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("hetsched_admission_requests_total{"))


def test_the_shim_asks_the_daemon_and_the_daemon_counts_it(cluster):
    routed = ask(cluster.socket, {"gres": "gres:gpu:1"})["set"]["partition"]
    before = _answered(cluster)
    job, said = _submit(cluster.client("bob"), "--gres=gpu:1", "--wrap", "true")
    # job_submit.lua's log_user line with the daemon's answer (not its static fallback table)
    assert f"partition={routed}" in said and "admission unavailable" not in said and "can run on" in said, said
    assert cluster.client().show_job(job)["Partition"] == routed
    assert _answered(cluster) == before + 1


def test_the_cycle_ranks_the_pending_queue_of_the_same_slurmctld(cluster):
    """Two equal jobs but for their time limits wait behind a whole-node job; the suite's cycle (policy file:
    SJF) gives the shorter one the higher SiteFactor through the applier (journal), and Slurm starts it first."""
    root = cluster.client()
    blocker = root.sbatch("-p", "riscv", "--exclusive", *QUIET, wrap="sleep 300")
    root.wait_job(blocker, 60, until=("RUNNING",))
    alice = cluster.client("alice")
    long_, _ = _submit(alice, "-p", "riscv", "--exclusive", "-t", "30", "--wrap", "sleep 20")
    short, _ = _submit(alice, "-p", "riscv", "--exclusive", "-t", "5", "--wrap", "sleep 20")
    journal = cluster.root / cluster.plan().data("suite") / "journal.jsonl"

    def factors():
        """Job -> the last SiteFactor the cycle set for it (journal), once both have one."""
        lines = journal.read_text().splitlines() if journal.exists() else []
        got = {j: e["site_factor"] for e in map(json.loads, filter(None, lines))
               if e.get("kind") == "site_factor" and e["ok"] for j in e["job_ids"] if j in (long_, short)}
        return got if len(got) == 2 else None

    got = until(factors, 90, 2)
    assert got and got[short] > got[long_], got
    state = json.loads((journal.parent / "cycle-state.json").read_text())
    assert state["cycles"] >= 1 and state["consecutive_failures"] == 0, state
    root.cancel(blocker)
    started = until(lambda: [j for j in (long_, short) if root.show_job(j).get("JobState") == "RUNNING"], 60, 0.5)
    assert started == [short], started


def test_admission_grants_a_class_by_the_users_slurmdbd_association(cluster):
    """bob claims class web in his comment: no site grant, no association, so his job keeps the default class's
    band (SiteFactor, sprio). Once slurmdbd has an association of bob with account web, admission (and the cycle,
    which reads the associations too) grant the class within their refresh: class web's band, in tier bronze
    (the QOS of his default account's association) unless the job names account web (tier silver); once the
    association is removed, no longer."""
    root, bob = cluster.client(), cluster.client("bob")
    cluster_name = root.run("scontrol", "show", "config").stdout.split("ClusterName")[1].split()[1]
    blocker = root.sbatch("-p", "riscv", "--exclusive", *QUIET, wrap="sleep 300")
    root.wait_job(blocker, 60, until=("RUNNING",))

    def band(*args: str) -> int:
        """The band of a pending job of bob's claiming class web: its SiteFactor // BAND_SPAN (SJF adds less)."""
        job, _ = _submit(bob, "-p", "riscv", "--exclusive", "--comment=class=web", *args, "--wrap", "true")
        return (until(lambda: root.site_factors(job).get(job), 10, 0.5) or 0) // BAND_SPAN

    gone = ("sacctmgr", "-i", "delete", "user", "bob", "account=web", f"cluster={cluster_name}")
    root.run(*gone, check=False)  # left by an interrupted run (the database outlives the cluster)
    assert until(lambda: band() == 0, 60, 3)  # the default class batch in tier bronze
    root.run("sacctmgr", "-i", "add", "user", "bob", "account=web", f"cluster={cluster_name}")
    try:
        assert until(lambda: band() == WEB_STEP, 60, 3), f"web never granted after the association: {band()}"
        assert band("-A", "web") == WEB_BAND
    finally:  # slurmdbd keeps an association while jobs of it are active
        root.cancel(*(int(j) for j in root.run("squeue", "-h", "-u", "bob", "-o", "%A").stdout.split()))
        until(lambda: not root.run("squeue", "-h", "-u", "bob", "-o", "%A").stdout.split(), 30, 0.5)
        root.run(*gone)
    assert until(lambda: band() == 0, 60, 3), "web still granted after the association was removed"
