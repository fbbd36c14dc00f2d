"""Accounting that matters, on the real container cluster (slurmctld + slurmdbd + MariaDB from Debian's
packages): QOS tiers order work, fair-share orders two users' equal jobs, associations refuse a class a user is
not entitled to, sacct keeps the history, and the sacctmgr setup is idempotent."""

from __future__ import annotations

import pytest

from slurm_plugin.conf.accounting import apply_site
from slurm_plugin.site import load_site
from slurm_plugin.slurm import SlurmError
from tests.containers.conftest import until
from tests.waiting import wait_for

pytestmark = pytest.mark.containers
# rvn1 is the riscv partition's only node: a whole-node job there blocks everything behind it.
WHOLE_NODE = ("-p", "riscv", "--exclusive", "-D", "/tmp", "-o", "/dev/null")


def _prio(client, job: int) -> dict[str, int]:
    """sprio's weighted factors of one pending job (24.11 refuses a list of ids)."""
    out = client.run("sprio", "-h", "-j", str(job), "-o", "%Y %A %F %Q %S").stdout.split()
    return dict(zip(("priority", "age", "fairshare", "qos", "site"), map(int, out))) if out else {}



@pytest.fixture(autouse=True)
def _no_jobs_left(cluster):
    """Each test starts and ends with an empty queue (a failed test leaves no blocker behind)."""
    yield
    root = cluster.client()
    root.cancel(*map(int, root.run("squeue", "-h", "-o", "%A").stdout.split()))
    until(lambda: not root.run("squeue", "-h", "-o", "%A").stdout.split(), 30, 0.5)


def _block(cluster) -> int:
    root = cluster.client()
    job = root.sbatch(*WHOLE_NODE, "-A", "batch", wrap="sleep 300")
    root.wait_job(job, 60, until=("RUNNING",))
    return job


def _first_to_run(cluster, blocker: int, a: int, b: int) -> int:
    """Cancel the blocker; the one of jobs a, b that Slurm starts (the other stays pending behind it)."""
    root = cluster.client()
    root.cancel(blocker)
    started = until(lambda: [j for j in (a, b) if root.show_job(j).get("JobState") == "RUNNING"], 60, 0.5)
    root.cancel(a, b)
    assert len(started) == 1, f"expected one of {a}, {b} to start, got {started}"
    return started[0]


def test_setup_is_idempotent(cluster):
    assert apply_site(cluster.client(), load_site(cluster.state()["site_path"]), ["alice", "bob"], dry_run=True) == []


def test_a_user_without_the_account_cannot_run_gold_work(cluster):
    bob, alice = cluster.client("bob"), cluster.client("alice")
    for args in (("-A", "ai-training"), ("--qos", "gold")):
        with pytest.raises(SlurmError, match="Invalid (account|qos)"):
            bob.sbatch("-D", "/tmp", "-o", "/dev/null", *args, wrap="true")
    job = alice.sbatch("-D", "/tmp", "-o", "/dev/null", "-A", "ai-training", wrap="true")
    assert alice.show_job(job)["QOS"] == "gold"
    assert bob.show_job(bob.sbatch("-D", "/tmp", "-o", "/dev/null", wrap="true"))["QOS"] == "bronze"


def test_gold_outranks_bronze_submitted_before_it(cluster):
    blocker = _block(cluster)
    bronze = cluster.client("bob").sbatch(*WHOLE_NODE, wrap="sleep 30")
    gold = cluster.client("alice").sbatch(*WHOLE_NODE, "-A", "ai-training", wrap="sleep 30")
    pb, pg = _prio(cluster.client(), bronze), _prio(cluster.client(), gold)
    assert pg["qos"] > 0 == pb["qos"] and pg["priority"] > pb["priority"], (pg, pb)
    assert _first_to_run(cluster, blocker, bronze, gold) == gold


def test_fair_share_orders_two_users_equal_jobs_and_age_counts(cluster):
    """alice's whole-node job runs (her usage in account batch grows) while she and then bob queue an equal
    job behind it; once slurmctld recomputes priorities (every PriorityCalcPeriod, 1 minute) bob's ranks first
    by fair-share although alice's is older, and both have an age factor. (The suite's cycle gives equal jobs
    one SJF level, so it waits until their SiteFactors are equal too: the first job alone had the top level.)"""
    alice, bob = cluster.client("alice"), cluster.client("bob")
    used = alice.sbatch(*WHOLE_NODE, wrap="sleep 300")
    alice.wait_job(used, 60, until=("RUNNING",))
    first = alice.sbatch(*WHOLE_NODE, wrap="sleep 30")
    second = bob.sbatch(*WHOLE_NODE, wrap="sleep 30")
    root = cluster.client()

    def factors():
        pa, pb = _prio(root, first), _prio(root, second)
        return (pa, pb) if pa.get("age", 0) > 0 and pb.get("fairshare", 0) > pa.get("fairshare", 0) and \
            pa.get("site") == pb.get("site") else None

    assert until(factors, 130, 2), f"no fair-share difference or age factor: {_prio(root, first)}, {_prio(root, second)}"
    pa, pb = factors()
    assert pb["priority"] > pa["priority"] and pb["age"] > 0, (pa, pb)
    assert _first_to_run(cluster, used, first, second) == second


def test_sacct_keeps_the_history(cluster):
    alice = cluster.client("alice")
    job = alice.sbatch("-D", "/tmp", "-o", "/dev/null", "-A", "ai-training", "-p", "x86", wrap="true")
    alice.wait_job(job, 60)
    rows = until(lambda: [r.split("|") for r in cluster.client().run(
        "sacct", "-X", "-n", "-P", "-a", "-j", str(job), "-o", "JobID,User,Account,QOS,State").stdout.splitlines()
        if r.split("|")[-1] == "COMPLETED" and "Unknown" not in r], 30)  # the QOS's name comes a bit later
    assert rows == [[str(job), "alice", "ai-training", "gold", "COMPLETED"]]
    everyone = cluster.client().run("sacct", "-X", "-n", "-P", "-a", "-S", "now-1hour", "-o", "User").stdout.split()
    assert {"alice", "bob"} <= set(everyone)


@pytest.mark.parametrize("partition,args", [
    ("x86", ("-n", "4")),
    ("x86", ("-n", "1", "--mem=24G")),  # memory is the larger share of the node
    ("gpu", ("-n", "2", "--gres=gpu:a100:1")),
])
def test_slurm_bills_what_the_cost_model_says_and_the_report_reads_it(cluster, partition, args):
    """The rendered TRESBillingWeights and PriorityFlags=MAX_TRES make slurmctld bill a job exactly
    :func:`billing` of what it holds; `cost report`'s reader gets the same job back from sacct with its
    cost priced per node, equal to what Slurm billed where the partition's nodes all cost the same."""
    from slurm_plugin.conf.billing import BILLING_SCALE, billing, partition_weights
    from slurm_plugin.cost.report import cost_report
    from slurm_plugin.cost.usage import SACCT_FIELDS, parse_alloc_tres, read_usage

    site = load_site(cluster.state()["site_path"])
    root = cluster.client()
    job = root.sbatch("-p", partition, "-A", "batch", "-D", "/tmp", "-o", "/dev/null", *args, wrap="sleep 3")
    running = root.wait_job(job, 90, until=("RUNNING", "COMPLETED"))
    tres = running.get("AllocTRES", running.get("TRES"))  # `scontrol show job`: TRES= on 22.05, AllocTRES= on 24.11
    cpus, mem_gb, gres, billed = parse_alloc_tres(tres)
    expected = billing(partition_weights(site, partition), cpus, mem_gb, gres)
    assert billed is not None and expected > 0 and abs(billed - expected) <= 1.0, (tres, expected)
    root.wait_job(job, 90)
    part_at, last = SACCT_FIELDS.index("Partition"), {}

    def recorded():
        """sacct's text once the job's row carries its partition: slurmdbd fills a record's fields as
        slurmctld's messages arrive (as the QOS name above); one CI run read a `--mem` job's row on 22.05
        before its partition was there."""
        last["text"] = root.run("sacct", "-a", "-X", "-P", "-j", str(job), "-o", ",".join(SACCT_FIELDS)).stdout
        rows = [r.split("|") for r in last["text"].splitlines() if r.startswith(f"{job}|")]
        return last["text"] if rows and rows[0][part_at] else None

    out = wait_for(lambda: f"sacct to show job {job}'s partition; last read:\n{last.get('text')}", recorded, 30, 1.0)
    (use,) = read_usage(out.splitlines(), site, "sacct")
    assert use.billing == billed and use.nodes and use.elapsed_s >= 1
    (row,) = cost_report(site, [use], by=("partition",))
    assert row.key == (partition,) and row.cost > 0
    if len(next(p for p in site.partitions if p.name == partition).node_groups) == 1:  # x86: one price
        assert row.billed == pytest.approx(row.cost, rel=0.01, abs=1.0 / BILLING_SCALE)
