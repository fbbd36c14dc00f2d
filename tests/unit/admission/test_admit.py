"""admit(): one table row per decision kind, on an in-memory snapshot of the demo site."""

from __future__ import annotations

import pytest
from .builders import busy, demo, drained, node

from slurm_plugin.admission import AdmissionOptions, JobRequest, admit, arch_choice, classify
from slurm_plugin.admission.classify import BAND_SPAN
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import Snapshot

SITE = load_site("demo")
ALL_ARM_BUSY = {f"armn{i}": busy(f"armn{i}", "aarch64") for i in (1, 2, 3)}
ALL_X86_BUSY = {f"x86n{i}": busy(f"x86n{i}", "x86_64", 16) for i in (1, 2)}

# (id, request, snapshot changes, expected action, expected changes (subset), a word the reason must contain)
CASES = [
    # --- architecture routing
    ("or-constraint-prefers-free-arm", JobRequest(features="aarch64|x86_64", min_cpus=4), {},
     "accept", {"features": "aarch64"}, "routed to aarch64"),
    ("or-constraint-goes-where-room-is", JobRequest(features="aarch64|x86_64", min_cpus=4), ALL_ARM_BUSY,
     "accept", {"features": "x86_64"}, "routed to x86_64"),
    ("drained-arm-counts-as-no-room", JobRequest(features="aarch64|x86_64"),
     {f"armn{i}": drained(node(f"armn{i}", "aarch64")) for i in (1, 2, 3)},
     "accept", {"features": "x86_64"}, "x86_64"),
    ("too-big-for-x86-goes-arm", JobRequest(features="aarch64|x86_64", min_cpus=32), {},
     "accept", {"features": "aarch64"}, "aarch64"),
    ("nothing-free-left-to-slurm", JobRequest(features="aarch64|x86_64"), {**ALL_ARM_BUSY, **ALL_X86_BUSY},
     "accept", {}, "left to Slurm"),
    ("pinned-never-moved", JobRequest(features="aarch64", min_cpus=4), ALL_ARM_BUSY,
     "accept", {}, "pinned to aarch64"),
    ("pinned-in-expression-never-moved", JobRequest(features="aarch64&smartnic"), ALL_ARM_BUSY, "accept", {}, ""),
    ("named-nodes-never-moved", JobRequest(features="aarch64|x86_64", req_nodes="armn1"), {}, "accept", {}, ""),
    ("named-partition-kept", JobRequest(features="aarch64|x86_64", partition="x86"), {},
     "accept", {"features": "x86_64"}, "partition x86"),
    ("portable-class-to-riscv-when-others-full", JobRequest(comment="class=web"), {**ALL_ARM_BUSY, **ALL_X86_BUSY},
     "accept", {"features": "riscv64", "partition": "riscv"}, "portable class web"),
    ("non-portable-class-not-moved", JobRequest(comment="class=batch"), ALL_ARM_BUSY, "accept", {}, "class batch"),
    ("memory-need-respected", JobRequest(features="aarch64|x86_64", mem_per_node_mb=200000),
     {"x86n1": node("x86n1", "x86_64", 16, mem=262144)}, "accept", {"features": "x86_64"}, "x86_64"),
    # --- accelerator mapping
    ("untyped-gpu-to-gpu-partition", JobRequest(gres="gres:gpu:1"), {},
     "accept", {"partition": "gpu"}, "a100, h100"),
    ("untyped-npu-to-npu-partition", JobRequest(gres="gres:npu:2"), {},
     "accept", {"partition": "npu"}, "ascend910b"),
    ("24.11-gres-form", JobRequest(gres="gres/gpu=1"), {}, "accept", {"partition": "gpu"}, "partition gpu"),
    ("gpu-with-arch-constraint", JobRequest(gres="gres:gpu:1", features="x86_64"), {},
     "accept", {"partition": "gpu"}, "a100"),
    ("named-partition-that-can-serve-kept", JobRequest(gres="gres:gpu:1", partition="gpu"), {}, "accept", {}, ""),
    ("gpus-per-job-to-gpu-partition", JobRequest(tres_per_job="gres:gpu:2"), {},
     "accept", {"partition": "gpu"}, "partition gpu"),
    ("gpus-per-job-may-span-nodes", JobRequest(tres_per_job="gres/gpu=9"), {}, "accept", {"partition": "gpu"}, ""),
    ("gpus-per-job-unknown-type-refused", JobRequest(tres_per_job="gres:gpu:v100:1"), {}, "reject", {}, "v100"),
    ("too-many-gpus-refused", JobRequest(gres="gres:gpu:8"), {}, "reject", {}, "at most 4 per node"),
    ("unknown-type-refused", JobRequest(gres="gres:gpu:v100:1"), {}, "reject", {}, "type 'v100'"),
    ("unknown-gres-refused", JobRequest(gres="gres:fpga:1"), {}, "reject", {}, "no node in this cluster has GRES"),
    ("gpu-on-riscv-refused", JobRequest(gres="gres:gpu:1", features="riscv64"), {}, "reject", {}, "riscv64"),
    ("two-kinds-no-single-node", JobRequest(gres="gres:gpu:1,gres:npu:1"), {}, "reject", {}, "no single node"),
    ("partition-without-npu-refused", JobRequest(gres="gres:npu:1", partition="batch"), {},
     "reject", {}, "partitions that do: npu"),
    ("busy-gpus-still-accepted", JobRequest(gres="gres:gpu:1"),
     {"a100n1": busy("a100n1", "x86_64", 32, gres="gpu:a100:4")}, "accept", {"partition": "gpu"}, "1 suitable"),
    # --- class and tier (root may claim any; docs/trust.md)
    ("class-from-comment", JobRequest(comment="class=ai-training", gres="gres:gpu:1", user_id=0), {},
     "accept", {"site_factor": 1030 * BAND_SPAN}, "tier gold"),
    ("class-from-wckey", JobRequest(wckey="video-render", user_id=0), {}, "accept", {"site_factor": 520 * BAND_SPAN}, "from wckey"),
    ("class-from-account", JobRequest(account="web", user_id=0), {}, "accept", {"site_factor": 510 * BAND_SPAN}, "from account"),
    ("tier-from-qos", JobRequest(qos="gold", user_id=0), {}, "accept", {"site_factor": 1000 * BAND_SPAN}, "from --qos"),
    ("tier-lowered-by-comment", JobRequest(comment="class=web tier=bronze", user_id=0), {},
     "accept", {"site_factor": 10 * BAND_SPAN}, "tier bronze (from comment)"),
    ("tier-not-raised-by-comment", JobRequest(comment="class=batch tier=gold"), {},
     "accept", {}, "tier bronze"),
    ("unknown-class-named", JobRequest(comment="class=nope"), {}, "accept", {}, "unknown class 'nope'"),
    # --- an ordinary user (uid 65534, no grant, no accounting) claims: routing kept, priority never raised
    ("user-comment-class-not-granted", JobRequest(comment="class=ai-training", gres="gres:gpu:1", user_id=65534),
     {}, "accept", {"site_factor": None, "partition": "gpu"}, "not granted"),
    ("user-qos-not-enforced", JobRequest(qos="gold", user_id=65534), {}, "accept", {"site_factor": None},
     "--qos=gold ignored"),
    ("user-wckey-not-granted", JobRequest(wckey="ai-training", user_id=65534), {}, "accept",
     {"site_factor": None, "comment": "hetsched:class=ai-training,tier=bronze,band-of=batch"}, "not granted"),
    ("user-account-not-enforced", JobRequest(account="web", user_id=65534), {}, "accept", {"site_factor": None},
     "not granted"),
    ("user-portable-class-still-routed", JobRequest(comment="class=web", user_id=65534),
     {**ALL_ARM_BUSY, **ALL_X86_BUSY}, "accept", {"features": "riscv64", "site_factor": None}, "portable class web"),
    ("default-class-annotated", JobRequest(), {}, "accept", {"comment": "hetsched:class=batch,tier=bronze"},
     "from default"),
]


@pytest.mark.parametrize("req, changes, action, expect, word",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_admit(req, changes, action, expect, word):
    d = admit(req, demo(**changes), SITE)
    assert d.action == action, d
    assert {k: d.changes.get(k) for k in expect} == expect, d
    assert word in d.reason, d


def test_pinned_job_changes_nothing_but_band():
    d = admit(JobRequest(features="x86_64", comment="mine"), demo(**ALL_X86_BUSY), SITE)
    assert set(d.changes) <= {"site_factor"}


def test_empty_snapshot_never_refuses():
    d = admit(JobRequest(gres="gres:gpu:99", features="aarch64|x86_64"), Snapshot.empty(), SITE)
    assert d.action == "accept" and "features" not in d.changes and "partition" not in d.changes


def test_modify_only_checks():
    assert admit(JobRequest(op="modify", gres="gres:gpu:9"), demo(), SITE).action == "reject"
    d = admit(JobRequest(op="modify", gres="gres:gpu:1", features="aarch64|x86_64"), demo(), SITE)
    assert d.action == "accept" and d.changes == {}


def test_options_turn_off_band_and_comment_and_set_qos():
    opts = AdmissionOptions(set_qos=True, site_factor=False, annotate_comment=False)
    d = admit(JobRequest(comment="class=web", user_id=0), demo(), SITE, opts)
    assert "site_factor" not in d.changes and d.changes.get("qos") == "silver"
    assert "comment" not in admit(JobRequest(), demo(), SITE, opts).changes


def test_unreadable_gres_accepted_unchanged():
    d = admit(JobRequest(gres="gpu:x=y"), demo(), SITE)
    assert d.action == "accept" and d.changes == {} and "not understood" in d.reason


def test_time_limit_excludes_short_partitions():
    d = admit(JobRequest(gres="gres:dpu:1", time_limit=24 * 60), demo(), SITE)
    assert "partition" not in d.changes  # dpu allows 12 h only: not routed there


@pytest.mark.parametrize("expr, archs, routable", [
    ("aarch64|x86_64", {"aarch64", "x86_64"}, True), ("x86_64", {"x86_64"}, False), ("", set(), False),
    ("aarch64&bigmem", {"aarch64"}, False), ("[aarch64|x86_64]", {"aarch64", "x86_64"}, False),
    ("bigmem|smartnic", set(), False), ("aarch64|riscv64|x86_64", {"aarch64", "riscv64", "x86_64"}, True),
])
def test_arch_choice(expr, archs, routable):
    assert arch_choice(expr) == (arch_choice(expr).__class__(frozenset(archs), routable))


def test_class_order_is_priority_order():
    bands = [classify(JobRequest(comment=f"class={c.name}", qos="bronze", user_id=0), SITE).band
             for c in SITE.policy.workload_classes]
    assert bands == sorted(bands, reverse=True) and len(set(bands)) == len(bands)


def test_routed_job_records_what_its_user_allowed_for_the_cycle():
    from slurm_plugin.cycle.inputs import allowed_archs
    from slurm_plugin.snapshot import JobState

    d = admit(JobRequest(features="aarch64|x86_64", min_cpus=4), demo(**ALL_ARM_BUSY), SITE)
    assert d.changes["features"] == "x86_64"
    assert d.changes["comment"] == "hetsched:class=batch,tier=bronze,flex=aarch64|x86_64"
    # the cycle reads it back as a flexible job, even though its constraint now names one arch
    job = JobState(1, "PENDING", features=d.changes["features"], comment=d.changes["comment"])
    assert allowed_archs(job, SITE) == (("aarch64", "x86_64"), True)
    # a user's own comment is never rewritten, so such a job stays where admission put it
    assert "comment" not in admit(JobRequest(features="aarch64|x86_64", comment="mine"), demo(), SITE).changes
