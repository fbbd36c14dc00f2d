"""Calendar reshaping on the demo site: which nodes each partition gets, in each node group's time zone."""

from __future__ import annotations

import datetime as dt

import pytest

from slurm_plugin.decision import Cause, SetPartitionNodes
from slurm_plugin.scale.reshape import plan_reshape, wanted_nodes
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import JobState, PartitionState, Snapshot

SITE = load_site("demo")


def at(iso: str) -> dt.datetime:
    return dt.datetime.fromisoformat(iso).replace(tzinfo=dt.timezone.utc)


@pytest.mark.parametrize("partition,when,nodes", [
    ("dev", "2026-12-01T10:00", ["armn1"]),                        # Tuesday 11:00 Paris: workdays, 33 % of 3 rounded up
    ("dev", "2026-12-05T10:00", ["armn1", "armn2", "armn3"]),      # Saturday
    ("render", "2026-12-05T10:00", ["x86n1", "x86n2", "a100n1"]),  # weekend: the A100 node renders
    ("render", "2026-12-01T10:00", ["x86n1", "x86n2"]),
    ("arm", "2026-12-01T15:00", ["armn1", "armn2", "armn3", "npun1"]),  # 23:00 in Shanghai
    ("arm", "2026-12-01T06:00", ["armn1", "armn2", "armn3"]),           # 14:00 in Shanghai
])
def test_wanted_nodes(partition, when, nodes):
    assert wanted_nodes(SITE, partition, at(when))[0] == nodes


def snap(partitions: dict[str, tuple[str, ...]], jobs=()) -> Snapshot:
    return Snapshot(partitions=tuple(PartitionState(p, n) for p, n in partitions.items()), jobs=tuple(jobs))


def test_a_node_running_a_job_of_the_partition_stays_until_the_job_ends():
    current = {"dev": ("armn1", "armn2", "armn3"), "render": ("x86n1", "x86n2"), "arm": ("armn1", "armn2", "armn3")}
    job = JobState(7, "RUNNING", partition="dev", nodes="armn3")
    [act] = plan_reshape(snap(current, [job]), SITE, at("2026-12-01T10:00")).actions
    assert act == SetPartitionNodes("dev", ("armn1", "armn3"), act.reason, Cause.CALENDAR)
    assert "armn3 still run jobs of dev and leave when they end" in act.reason
    assert "dev-small-on-workdays (cpu-arm keeps 33%)" in act.reason
    # a job of another partition on the node does not hold it
    other = JobState(8, "RUNNING", partition="batch", nodes="armn2")
    [act] = plan_reshape(snap(current, [other]), SITE, at("2026-12-01T10:00")).actions
    assert act.nodes == ("armn1",)


def test_nothing_to_do_when_partitions_already_match():
    current = {"dev": ("armn1", "armn2", "armn3"), "render": ("x86n1", "x86n2"), "arm": ("armn1", "armn2", "armn3")}
    assert plan_reshape(snap(current), SITE, at("2026-11-30T06:30")).actions == ()  # Mon 07:30 Paris, 14:30 SH


def test_back_to_the_site_layout_when_no_rule_is_active():
    current = {"dev": ("armn1",), "render": ("x86n1", "x86n2", "a100n1"), "arm": ("armn1", "armn2", "armn3")}
    acts = {a.partition: a for a in plan_reshape(snap(current), SITE, at("2026-12-07T06:00")).actions}  # Mon 07:00
    assert acts["dev"].nodes == ("armn1", "armn2", "armn3")
    assert acts["render"].nodes == ("x86n1", "x86n2")
    assert "no rule active" in acts["render"].reason
