"""Pure parts of slurm_plugin/deploy: the form admission chooses, oci.conf per Slurm version, the audit
chain, the wipe sequence, image references."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from slurm_plugin.admission import AdmissionOptions, admit
from slurm_plugin.admission.request import JobRequest
from slurm_plugin.deploy import audit
from slurm_plugin.deploy.cache import CacheView
from slurm_plugin.deploy.form import DeployView, choose_form
from slurm_plugin.deploy.images import Image, ImageError, parse_ref
from slurm_plugin.deploy.oci import render_oci_conf
from slurm_plugin.deploy.site_patch import patch_site
from slurm_plugin.deploy.wipe import drain_reason, plan_wipes
from slurm_plugin.site import SITE_CONFIGS, Site
from slurm_plugin.snapshot import Snapshot
from slurm_plugin.snapshot.model import NodeState

IMAGE = Image("busybox", "latest", Path("/s/busybox"), "sha256:" + "ab" * 32, 1 << 20)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    patch_site(data, tmp_path_factory.mktemp("root"))
    return Site.model_validate(data)


def _view(unpacked=True, used=0, max_bytes=1 << 30):
    return DeployView({IMAGE.ref: IMAGE}, CacheView("/c", frozenset(), frozenset({IMAGE.key} if unpacked else ()),
                                                    used, max_bytes))


def _cls(site, name):
    return next(c for c in site.policy.workload_classes if c.name == name) if name else None


@pytest.mark.parametrize("req, cls, view, form, refuse, text", [
    (JobRequest(), None, _view(), "batch", False, "form batch (class -)"),
    (JobRequest(image="busybox"), None, _view(), "container", False, "(warm)"),
    (JobRequest(comment="image=busybox"), None, _view(False), "container", False, "cold: unpacked on the node"),
    (JobRequest(), "boxed", _view(), "container", False, "form container (class boxed)"),
    (JobRequest(image="nosuch:1"), None, _view(), "container", True, "unknown image nosuch:1"),
    (JobRequest(image="Bad Ref"), None, _view(), "container", True, "is not name[:tag]"),
    (JobRequest(image="busybox"), None, _view(False, used=1 << 30), "container", True, "no room for image"),
    (JobRequest(), "secret", _view(), "sensitive", False, "exclusive nodes of partition secure"),
    (JobRequest(partition="secure"), None, _view(), "batch", True, "holds only sensitive work"),
    (JobRequest(), "burst", _view(), "function", False, "hetsched fn invoke"),
    (JobRequest(comment="class=burst fn=echo"), "burst", _view(), "function", False, "pilot job"),
])
def test_form_table(site, req, cls, view, form, refuse, text):
    choice = choose_form(req, _cls(site, cls), site, view)
    assert (choice.form, choice.refuse) == (form, refuse) and text in choice.reason, choice
    if form == "container" and not refuse:
        assert choice.changes == {"container": f"/c/{IMAGE.key}"}


def test_admission_says_the_form_and_routes_sensitive_jobs(site):
    d = admit(JobRequest(comment="class=secret", user_id=0), Snapshot(), site, AdmissionOptions(deploy=_view()))
    assert d.action == "accept" and d.changes["partition"] == "secure" and "form sensitive" in d.reason
    d = admit(JobRequest(image="nosuch", user_id=0), Snapshot(), site, AdmissionOptions(deploy=_view()))
    assert d.action == "reject" and "unknown image nosuch:latest" in d.reason


def test_admission_of_a_site_without_deployment_is_unchanged():
    demo = Site.model_validate(yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text()))
    d = admit(JobRequest(user_id=0), Snapshot(), demo)
    assert "form" not in d.kinds and "form" not in d.reason


def test_a_sensitive_class_without_an_enclave_is_refused(site):
    bare = site.model_copy(update={"partitions": tuple(p for p in site.partitions if p.name != "secure")})
    choice = choose_form(JobRequest(), _cls(site, "secret"), bare, _view())
    assert choice.refuse and "no exclusive partition" in choice.reason


@pytest.mark.parametrize("version, line", [((22, 5), "CreateEnvFile=false"), ((24, 11), "CreateEnvFile=disabled")])
def test_oci_conf_syntax_per_version(site, version, line):
    text = render_oci_conf(site, "/opt/oci-run", "/run/oci", version)
    assert line in text and 'RunTimeRun="/opt/oci-run %b %n.%u.%j.%s.%t"' in text
    assert 'RunTimeDelete="runc --root=/run/oci delete --force %n.%u.%j.%s.%t"' in text
    assert "RunTimeCreate" not in text.split("#")[-1]  # Run excludes Create/Start


def test_oci_conf_refuses_a_path_it_cannot_hold(site):
    with pytest.raises(ValueError, match="cannot be written into oci.conf"):
        render_oci_conf(site, "/opt/oci run", "/run/oci", (22, 5))


def test_partition_renders_exclusive(site):
    from slurm_plugin.conf import render_site

    conf = render_site(site)["slurm.conf"]
    assert "PartitionName=secure Nodes=x86n[1-2]" in conf and "OverSubscribe=EXCLUSIVE" in conf
    assert "Prolog=/usr/lib/hetsched/prolog" in conf and "Epilog=/usr/lib/hetsched/epilog" in conf


def test_image_refs():
    assert parse_ref("busybox") == ("busybox", "latest") and parse_ref("a.b-c:1.2") == ("a.b-c", "1.2")
    for bad in ("", "Busybox", "x:", "x y", "../etc"):
        with pytest.raises(ImageError):
            parse_ref(bad)


def test_audit_chain_is_append_only_and_tamper_evident(tmp_path):
    log = tmp_path / "audit.jsonl"
    for job in (1, 2, 3):
        audit.append(log, "start", job_id=job, user="alice", node="x86n1")
    assert audit.verify(log) == [] and [r["job_id"] for r in audit.records(log)] == [1, 2, 3]
    lines = log.read_text().splitlines()
    edited = json.loads(lines[1]) | {"user": "mallory"}
    log.write_text("\n".join([lines[0], json.dumps(edited, sort_keys=True), lines[2]]) + "\n")
    assert audit.verify(log) == [f"{log}:3: prev does not match line 2 (edited or removed)"]
    log.write_text("\n".join([lines[0], lines[2]]) + "\n")  # a removed line
    assert audit.verify(log) == [f"{log}:2: prev does not match line 1 (edited or removed)"]


def _node(name, state, reason="", flags=(), alloc=0):
    return NodeState(name=name, state=state, flags=tuple(flags), cpus=4, alloc_cpus=alloc, reason=reason)


@pytest.mark.parametrize("node, memory, expected", [
    # powered off and drained again at once: Slurm would otherwise boot it for a pending job (22.05)
    (_node("n1", "IDLE", drain_reason(7), ("DRAIN",)), {}, [("POWER_DOWN_FORCE", "n1"), ("DRAIN", "n1")]),
    (_node("n1", "IDLE", drain_reason(7), ("DRAIN", "COMPLETING")), {}, []),  # the job is still being cleaned up
    (_node("n1", "IDLE", "", ("POWERING_DOWN",)), {"n1": ["wiping", "7"]}, []),
    # off: undrained and left off, so no POWER_UP-then-DRAIN window in which Slurm gives it a job (22.05
    # requeues that job); Slurm boots it fresh for its next job
    (_node("n1", "IDLE", "", ("DRAIN", "POWERED_DOWN")), {"n1": ["wiping", "7"]}, [("UNDRAIN", "n1")]),
    (_node("n1", "IDLE", "", ("DRAIN", "NOT_RESPONDING", "POWERING_UP")), {"n1": ["wiped", "7"]}, []),
    (_node("n1", "IDLE", "", ("DRAIN",)), {"n1": ["wiped", "7"]}, [("RESUME", "n1")]),  # an older memory's phase
    (_node("n1", "IDLE", "hetsched: health: ECC", ("DRAIN",)), {}, []),  # not ours
    # Slurm booted it for a job before the step saw it off: cycle done; a later sensitive job starts over
    (_node("n1", "MIXED", "", ()), {"n1": ["wiping", "7"]}, []),
    (_node("n1", "IDLE", drain_reason(9), ("DRAIN",)), {"n1": ["wiping", "7"]},
     [("POWER_DOWN_FORCE", "n1"), ("DRAIN", "n1")]),
])
def test_wipe_sequence(node, memory, expected):
    decision, after = plan_wipes(Snapshot(nodes=(node,)), memory)
    assert [(a.action, a.nodes[0]) for a in decision.actions] == expected
    assert all(a.cause.value == "ISOLATION" for a in decision.actions)
    if expected and expected[-1][0] in ("RESUME", "UNDRAIN"):
        assert after == {}


def test_wipe_memory_walks_the_whole_sequence():
    memory: dict = {}
    steps = [(drain_reason(3), ("DRAIN",)), ("x", ("POWERING_DOWN",)), ("x", ("DRAIN", "POWERED_DOWN")),
             ("", ("POWERED_DOWN",)), ("", ("POWERING_UP",)), ("", ())]
    seen = []
    for reason, flags in steps:
        decision, memory = plan_wipes(Snapshot(nodes=(_node("n1", "IDLE", reason, flags),)), memory)
        seen += [a.action for a in decision.actions]
    assert seen == ["POWER_DOWN_FORCE", "DRAIN", "UNDRAIN"] and memory == {}


def test_isolation_check_reads_a_reboot_from_boot_times_not_uptimes():
    from slurm_plugin.deploy.isolation import parse, violations

    # sensitive job 16 ends at uptime 5.67; the node reboots at t=1012; job 24 starts 130 s after the boot
    cycled = parse("start 16 x86n1 5.17 1000.0\nend 16 x86n1 5.67 1000.5\nstart 24 x86n1 129.79 1141.79\n")
    assert violations(cycled, {"16", "24"}) == []  # an uptime comparison called this a violation
    # no reboot: job 3 starts on the same boot (its uptime grew by the wall time that passed)
    same_boot = parse("start 16 x86n1 5.17 1000.0\nend 16 x86n1 5.67 1000.5\nstart 3 x86n1 9.67 1004.5\n")
    assert violations(same_boot, {"16"}) == [
        "job 3 started on x86n1 after sensitive job 16 without a power cycle (booted at 994.83, before that "
        "job ended at 1000.50)"]
    shared = parse("start 16 x86n1 5.17 1000.0\nstart 3 x86n1 5.20 1000.03\nend 16 x86n1 5.67 1000.5\n")
    assert violations(shared, {"16"}) == ["job 3 started on x86n1 beside sensitive job 16"]
