"""Who may have which class and tier (docs/trust.md): accounting read from slurm.conf, site grants by uid/group."""

from __future__ import annotations

import grp
import pwd

import pytest
import yaml

from slurm_plugin.admission import JobRequest, classify
from slurm_plugin.admission.trust import Accounting, entitlement
from slurm_plugin.site import SITE_CONFIGS, load_site, parse_site
from slurm_plugin.site import SiteError

NOBODY = 65534


def site_with(grants):
    data = yaml.safe_load((SITE_CONFIGS / "demo.yaml").read_text())
    data["policy"]["grants"] = grants
    return parse_site(data)


@pytest.mark.parametrize("conf, qos, assoc", [
    ("", False, False),
    ("AccountingStorageType=accounting_storage/none\nAccountingStorageEnforce=qos\n", False, False),
    ("AccountingStorageType=accounting_storage/slurmdbd\n", False, False),
    ("accountingstoragetype=accounting_storage/slurmdbd\nAccountingStorageEnforce=associations\n", False, True),
    ("AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageEnforce=limits,qos # x\n", True, True),
    ("AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageEnforce=safe\n", False, True),
    ("AccountingStorageType=accounting_storage/slurmdbd\n#AccountingStorageEnforce=qos\n", False, False),
])
def test_accounting_from_slurm_conf(conf, qos, assoc):
    assert Accounting.from_slurm_conf(conf) == Accounting(qos=qos, associations=assoc)


def test_unreadable_slurm_conf_trusts_nothing(tmp_path):
    assert Accounting.of_file(tmp_path / "missing.conf") == Accounting()


def test_enforced_qos_and_account_grant_what_they_name():
    site = load_site("demo")
    enforced = Accounting(qos=True, associations=True)
    assert classify(JobRequest(qos="gold", user_id=NOBODY), site).band == 0
    assert classify(JobRequest(qos="gold", user_id=NOBODY), site, enforced).band == 1000
    assert classify(JobRequest(account="web", user_id=NOBODY), site, enforced).band == 510
    # a comment is never validated by Slurm, accounting or not
    assert classify(JobRequest(comment="class=ai-training", user_id=NOBODY), site, enforced).band == 0


def test_grant_by_user_name_and_by_uid():
    me = pwd.getpwuid(NOBODY).pw_name
    for who in (me, NOBODY):
        site = site_with([{"users": [who], "classes": ["video-render"]}])
        c = classify(JobRequest(comment="class=video-render", user_id=NOBODY), site)
        assert c.band == 520 and "not granted" not in c.why
        # a class above the grant stays out of reach
        assert classify(JobRequest(comment="class=ai-training", user_id=NOBODY), site).band == 0


def test_grant_by_group_uses_the_uid_groups_not_the_job():
    group = grp.getgrgid(pwd.getpwuid(NOBODY).pw_gid).gr_name
    site = site_with([{"groups": [group], "tiers": ["gold"]}])
    assert classify(JobRequest(qos="gold", user_id=NOBODY), site).band == 1000
    assert classify(JobRequest(comment="tier=gold", user_id=NOBODY), site).band == 0  # capped by batch's bronze


def test_root_and_unknown_uids():
    policy = load_site("demo").policy
    assert entitlement(0, policy).everything
    none = entitlement(None, policy)
    assert not none.everything and none.classes == {"batch"} and none.tiers == {"bronze"}


@pytest.mark.parametrize("grants, error", [
    ([{"users": ["alice"], "classes": ["nope"]}], "unknown class 'nope'"),
    ([{"users": ["alice"], "tiers": ["platinum"]}], "unknown tier 'platinum'"),
    ([{"classes": ["web"]}], "needs 'users' or 'groups'"),
    ([{"users": ["alice"]}], "needs 'classes' or 'tiers'"),
    ([{"users": ["al ice"], "classes": ["web"]}], "users"),
])
def test_bad_grants_are_refused_with_their_place(grants, error):
    with pytest.raises(SiteError) as err:
        site_with(grants)
    assert error in str(err.value) and "grants" in str(err.value)
