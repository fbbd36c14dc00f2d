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


# --- slurmdbd associations (the container cluster's system test checks them against a real slurmdbd) ---------
ASSOC = """demo|nobody|batch|bronze
demo|nobody|web|bronze,silver
other|nobody|ai-training|gold
demo||ai-training|gold
"""


def _db(assoc=ASSOC, users="nobody|batch\n"):
    from slurm_plugin.slurm.associations import AssociationCache
    from slurm_plugin.slurm.associations import parse

    return Accounting(qos=True, associations=True, db=AssociationCache(parse(assoc, users, "demo")))


def test_parse_keeps_the_clusters_user_rows():
    from slurm_plugin.slurm.associations import parse

    t = parse(ASSOC, "nobody|batch\n", "demo")
    assert set(t.users) == {"nobody"}
    a = t.users["nobody"]
    assert a.accounts == {"batch", "web"} and a.default_account == "batch"
    assert a.qos() == {"bronze"} and a.qos("web") == {"bronze", "silver"} and a.qos("ai-training") == frozenset()


def test_associations_grant_their_classes_and_tiers_and_nothing_else():
    site = load_site("demo")
    db = _db()
    # web is one of nobody's accounts: its class (named in a comment) is granted; its tier silver only with
    # account web, whose association has that QOS (the job's account is otherwise the default, batch: bronze)
    c = classify(JobRequest(comment="class=web", user_id=NOBODY), site, db)
    assert c.band == 10 and c.tier.name == "bronze" and "slurmdbd associations" in c.why, c.why
    assert "not granted" not in c.why and "tier silver of class web is not a QOS of the job's association" in c.why
    c = classify(JobRequest(comment="class=web", account="web", user_id=NOBODY), site, db)
    assert c.band == 510 and c.tier.name == "silver", c.why
    # ai-training exists (another cluster's row, an account-only row) but not as nobody's association here
    assert classify(JobRequest(comment="class=ai-training", user_id=NOBODY), site, db).band == 0
    # with the association known, an enforced --account/--qos the user lacks no longer grants (was: 1000/530)
    assert classify(JobRequest(account="ai-training", user_id=NOBODY), site, db).band == 0
    gold = classify(JobRequest(qos="gold", user_id=NOBODY), site, db)
    assert gold.band == 0 and "not in the user's slurmdbd association" in gold.why
    assert classify(JobRequest(qos="gold", user_id=NOBODY), site, Accounting(qos=True)).band == 1000
    # the QOS of the job's own account: silver with web, not with batch (its default account)
    assert classify(JobRequest(qos="silver", account="web", user_id=NOBODY), site, db).tier.name == "silver"
    assert classify(JobRequest(qos="silver", account="batch", user_id=NOBODY), site, db).tier.name == "bronze"


def test_a_job_naming_no_account_takes_the_users_default_account_as_slurm_will():
    site = load_site("demo")
    c = classify(JobRequest(user_id=NOBODY), site, _db(users="nobody|web\n"))
    assert c.workload_class.name == "web" and "default account" in c.why and c.band == 510
    # a user slurmdbd does not know keeps the enforce flags' trust
    unknown = _db(assoc="demo|someone|web|silver\n")
    assert classify(JobRequest(account="web", user_id=NOBODY), site, unknown).band == 510
