"""sacctmgr setup from the site file: what the demo site wants, and that the plan is idempotent and minimal."""

from __future__ import annotations

import pytest
import yaml

from slurm_plugin.conf.accounting import Account, Current, Qos, federation_plan, plan, setup_from_site
from slurm_plugin.site import SiteError, load_site, resolve_site_path
from slurm_plugin.site.loader import parse_site


def _site(extra: str = "", tiers: str = ""):
    doc = yaml.safe_load(resolve_site_path("demo").read_text())
    if tiers:
        doc["policy"]["qos_tiers"] = yaml.safe_load(tiers)
    if extra:
        doc["policy"].update(yaml.safe_load(extra))
    return parse_site(doc, "test.yaml")


def _as_current(want) -> Current:
    """What sacctmgr would show after the plan ran."""
    return Current(frozenset({want.cluster}), {q.name: q for q in want.qos}, {a.name: a for a in want.accounts},
                   {u: (d, frozenset(a)) for u, (d, a) in want.users.items()})


EMPTY = Current(frozenset(), {}, {}, {})


def test_demo_site_tiers_become_qos_and_classes_accounts():
    want = setup_from_site(load_site("demo"), ["alice"])
    assert [(q.name, q.priority) for q in want.qos] == [("gold", 1000), ("silver", 500), ("bronze", 0)]
    accts = {a.name: a for a in want.accounts}
    assert accts["ai-training"] == Account("ai-training", ("bronze", "gold", "silver"), "gold")
    assert accts["web"] == Account("web", ("bronze", "silver"), "silver")
    assert accts["batch"] == Account("batch", ("bronze",), "bronze")
    assert want.users["alice"] == ("batch", ("batch",))  # no grant: only the default class
    assert set(want.users["root"][1]) == set(accts)


def test_grants_add_the_granted_classes_accounts():
    site = _site(extra="grants: [{users: [alice], classes: [ai-training]}]")
    want = setup_from_site(site, ["alice", "bob"])
    assert want.users["alice"] == ("batch", ("ai-training", "batch"))
    assert want.users["bob"] == ("batch", ("batch",))


def test_plan_from_nothing_then_nothing_left_to_do():
    want = setup_from_site(load_site("demo"), ["alice"])
    cmds = plan(want, EMPTY)
    assert cmds[0] == ["add", "cluster", "hetsched-demo"]
    assert ["modify", "qos", "where", "name=gold", "set", "priority=1000"] in cmds
    assert ["add", "user", "alice", "account=batch", "cluster=hetsched-demo", "defaultaccount=batch"] in cmds
    assert plan(want, _as_current(want)) == []


def test_plan_changes_only_what_differs():
    want = setup_from_site(load_site("demo"), ["alice"])
    have = _as_current(want)
    qos = dict(have.qos, gold=Qos("gold", 900))
    users = dict(have.users, alice=("web", frozenset({"web"})))
    cmds = plan(want, Current(have.clusters, qos, have.accounts, users))
    assert cmds == [["modify", "qos", "where", "name=gold", "set", "priority=1000"],
                    ["add", "user", "alice", "account=batch", "cluster=hetsched-demo"],
                    ["modify", "user", "where", "name=alice", "cluster=hetsched-demo", "set", "defaultaccount=batch"]]


def test_preemption_and_limits_are_set_and_cleared():
    site = _site(tiers="[{name: gold, target_pct: 99.99, priority: 1000, preempts: [bronze], max_wall: '04:00:00',"
                       " grp_tres: 'cpu=64,gres/gpu=4'}, {name: silver, target_pct: 99.9, priority: 500},"
                       " {name: bronze, target_pct: 99.0}]")
    want = setup_from_site(site)
    gold = next(c for c in plan(want, EMPTY) if c[:4] == ["modify", "qos", "where", "name=gold"])
    assert gold[5:] == ["priority=1000", "preempt=bronze", "maxwall=04:00:00", "grptres=cpu=64,gres/gpu=4"]
    have = _as_current(setup_from_site(site))
    plain = setup_from_site(load_site("demo"))
    cmds = plan(plain, Current(have.clusters, have.qos, {a.name: a for a in plain.accounts},
                               {u: (d, frozenset(a)) for u, (d, a) in plain.users.items()}))
    assert cmds == [["modify", "qos", "where", "name=gold", "set", "preempt=''", "maxwall=-1",
                     "grptres=cpu=-1,gres/gpu=-1"]]


def test_a_tier_preempting_an_unknown_tier_is_refused():
    with pytest.raises(SiteError, match=r"qos_tiers\[0\]\.preempts\[0\].*unknown QoS tier 'bronz'"):
        _site(tiers="[{name: gold, target_pct: 99.99, priority: 1000, preempts: [bronz]},"
                    " {name: bronze, target_pct: 99.0}]")


def test_federation_plan_adds_modifies_or_leaves_it():
    assert federation_plan("f", ["b", "a"], {}) == [["add", "federation", "f", "clusters=a,b"]]
    assert federation_plan("f", ["a", "b"], {"f": {"a", "b"}}) == []
    assert federation_plan("f", ["a", "b"], {"f": {"a"}}) == [["modify", "federation", "where", "name=f", "set",
                                                               "clusters=a,b"]]


def test_a_cluster_of_another_federation_is_refused():
    with pytest.raises(ValueError, match=r"b \(g\) already in another federation"):
        federation_plan("f", ["a", "b"], {"g": {"b", "c"}})
