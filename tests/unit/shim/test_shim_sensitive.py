"""Isolation never fails open: the real job_submit.lua without a daemon, with the ``sensitive`` table that
``conf render`` writes (admission.fallback.sensitive_fallback). A sensitive job goes to the sensitive partitions
as admission would route it; a modification that would take it out is refused; another job asking for them is
refused; with no sensitive table, behaviour is unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from slurm_plugin.admission.fallback import sensitive_fallback
from slurm_plugin.conf import DeployPaths
from slurm_plugin.conf.render import shim_config
from slurm_plugin.deploy.site_patch import patch_site
from slurm_plugin.site import SITE_CONFIGS, Site

from .test_shim import run

pytestmark = pytest.mark.skipif(not shutil.which("lua5.1"), reason="lua5.1 not installed (apt-get install lua5.1)")

SENSITIVE = {"classes": {"web": False, "hpc": False, "secret": True}, "default_class": "web",
             "partitions": ["secure"]}


def config(where: Path, sensitive: dict | None = SENSITIVE, fail: str = "open") -> Path:
    """No daemon listens on the socket: every call takes the without-daemon path."""
    path = where / "hetsched-shim.json"
    doc = {"version": 1, "socket": str(where / "absent.sock"), "timeout_ms": 50, "fail": fail, "site": "demo",
           "fallback": {"gres": {"gpu": "gpu"}}}
    if sensitive is not None:
        doc["sensitive"] = sensitive
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("job", [
    {"comment": "class=secret"},
    {"comment": "tier=gold, class=secret"},
    {"comment": "hetsched:class=secret,tier=-"},
    {"wckey": "secret"},
    {"wckey": "class=secret"},
    {"account": "secret"},
    {"default_account": "secret"},  # the owner's default account in slurmdbd, no --account
    {"comment": "class=secret", "partition": "batch"},  # a partition named by the user does not escape
    {"comment": "class=secret", "tres_per_node": "gres:gpu:1"},  # nor does the GRES table
])
def test_a_sensitive_job_goes_to_the_sensitive_partitions(tmp_path, job):
    result = run(config(tmp_path), job)
    assert result["rc"] == 0 and result["set"] == {"partition": "secure"}
    assert any("sensitive" in m for m in result["user"])


@pytest.mark.parametrize("job", [
    {"comment": "class=web"},
    {"comment": "class=nosuch"},  # unknown class: the default class (web), as admission reads it
    {"comment": "class=web", "account": "secret"},  # the comment's class comes first
    {"account": "secret", "default_account": "web", "wckey": "hpc"},  # the wckey comes before the account
    {"account": "hpc", "default_account": "secret"},  # a named account hides the default one
    {},
])
def test_other_jobs_are_unchanged(tmp_path, job):
    result = run(config(tmp_path), job)
    assert result["rc"] == 0 and result["set"] == {}


def test_the_default_class_can_be_sensitive(tmp_path):
    result = run(config(tmp_path, dict(SENSITIVE, default_class="secret")), {"comment": "class=nosuch"})
    assert result["rc"] == 0 and result["set"] == {"partition": "secure"}


def test_another_job_asking_for_a_sensitive_partition_is_refused(tmp_path):
    result = run(config(tmp_path), {"partition": "batch,secure", "comment": "class=web"})
    assert result["rc"] == -1 and result["set"] == {}
    assert any("secure holds only sensitive work" in m for m in result["user"])


def test_a_sensitive_class_without_a_sensitive_partition_is_refused(tmp_path):
    result = run(config(tmp_path, dict(SENSITIVE, partitions=[])), {"comment": "class=secret"})
    assert result["rc"] == -1 and result["set"] == {}


def test_without_the_table_a_sensitive_claim_fails_open_unchanged(tmp_path):
    result = run(config(tmp_path, None), {"comment": "class=secret"})
    assert result["rc"] == 0 and result["set"] == {}


def test_fail_closed_still_refuses_everything(tmp_path):
    result = run(config(tmp_path, fail="closed"), {"comment": "class=secret"})
    assert result["rc"] == -1 and result["set"] == {}


SECRET_IN_ENCLAVE = {"job_id": 5, "partition": "secure", "comment": "hetsched:class=secret", "account": "root"}


@pytest.mark.parametrize("change,rc", [
    ({"partition": "batch"}, -1),  # out of the enclave: refused
    ({"partition": "secure"}, 0),
    ({"name": "renamed"}, 0),  # re-runs admission, stays in the enclave
    ({"comment": "class=web"}, -1),  # no longer sensitive but still in the enclave: refused
])
def test_modifying_a_sensitive_job_without_the_daemon(tmp_path, change, rc):
    result = run(config(tmp_path), dict(change, job_rec=SECRET_IN_ENCLAVE), mode="modify")
    assert result["rc"] == rc and result["set"] == {}


def test_a_modification_that_makes_a_shared_job_sensitive_is_refused(tmp_path):
    rec = {"job_id": 6, "partition": "batch", "comment": "class=web", "account": "root"}
    assert run(config(tmp_path), {"comment": "class=secret", "job_rec": rec}, mode="modify")["rc"] == -1
    assert run(config(tmp_path), {"comment": "class=hpc", "job_rec": rec}, mode="modify")["rc"] == 0


def test_the_rendered_config_routes_a_sensitive_job(tmp_path):
    """conf render's shim config for the deployment demo site, read by the real shim with no daemon."""
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    assert sensitive_fallback(Site.model_validate(data)) is None  # nothing sensitive: the shim skips the check
    patch_site(data, tmp_path / "root")
    site = Site.model_validate(data)
    doc = shim_config(site, DeployPaths())
    assert doc["sensitive"] == {"classes": {c.name: c.name == "secret" for c in site.policy.workload_classes},
                                "default_class": site.policy.default_class, "partitions": ["secure"]}
    doc["socket"] = str(tmp_path / "absent.sock")
    (tmp_path / "hetsched-shim.json").write_text(json.dumps(doc))
    result = run(tmp_path / "hetsched-shim.json", {"comment": "class=secret", "partition": "batch"})
    assert result["rc"] == 0 and result["set"] == {"partition": "secure"}
