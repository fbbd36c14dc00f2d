"""Follow-the-sun across a federation (admission/federation.py, pure) and its parts: the site section's checks,
the members' capacity as sinfo prints it, and admit() setting the job's ``clusters``."""

from __future__ import annotations

import datetime as dt

import pytest
import yaml

from slurm_plugin.admission import AdmissionOptions, JobRequest, admit
from slurm_plugin.admission.federation import route_federation
from slurm_plugin.site import SiteError, load_site, resolve_site_path
from slurm_plugin.snapshot import Snapshot
from slurm_plugin.snapshot.federation import FederationView, MemberCapacity, parse_capacity

# fed-a in Paris, fed-b in Tokyo (8 hours ahead in winter), the demo site being fed-a
FEDERATION = {"name": "hetsched-fed", "members": [{"cluster": "fed-a", "timezone": "Europe/Paris"},
                                                  {"cluster": "fed-b", "timezone": "Asia/Tokyo"}]}
PARIS_NIGHT = dt.datetime(2026, 12, 1, 23, 30, tzinfo=dt.timezone.utc)  # Paris 00:30, Tokyo 08:30
TOKYO_NIGHT = dt.datetime(2026, 12, 1, 15, 0, tzinfo=dt.timezone.utc)  # Paris 16:00, Tokyo 00:00
ROOM = MemberCapacity(free_cpus=64, free_nodes=4)
FULL = MemberCapacity(free_cpus=0, free_nodes=0)


def _site(tmp_path, **federation):
    doc = yaml.safe_load(resolve_site_path("demo").read_text())
    doc["slurm"]["cluster_name"] = "fed-a"
    doc["federation"] = {**FEDERATION, **federation}
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_site(path)


@pytest.fixture
def site(tmp_path):
    return _site(tmp_path)


def _route(site, view, now, req=JobRequest(min_cpus=4), wclass=None):
    return route_federation(req, wclass, site, FederationView(view, 1.0), now)


@pytest.mark.parametrize("now, view, want, words", [
    (TOKYO_NIGHT, {"fed-a": ROOM, "fed-b": ROOM}, "fed-b", ["follow-the-sun", "fed-b (Asia/Tokyo 00:00, night)"]),
    (PARIS_NIGHT, {"fed-a": ROOM, "fed-b": ROOM}, "fed-a", ["fed-a (Europe/Paris 00:30, night)", "also with room"]),
    # the night member is full: the day one with room, rather than waiting for the night
    (TOKYO_NIGHT, {"fed-a": ROOM, "fed-b": FULL}, "fed-a", ["fed-a (Europe/Paris 16:00, day)"]),
    # both day (Paris 09:00, Tokyo 17:00): the one with the most free CPUs
    (dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.timezone.utc),
     {"fed-a": MemberCapacity(8, 1), "fed-b": MemberCapacity(48, 3)}, "fed-b", ["48 CPUs free"]),
    # an outage: the night member does not answer, new work goes to the other
    (TOKYO_NIGHT, {"fed-a": ROOM, "fed-b": None}, "fed-a", ["fed-b not answering"]),
])
def test_the_member_chosen(site, now, view, want, words):
    changes, why = _route(site, view, now)
    assert changes == {"clusters": want}
    assert all(w in why for w in words), why


def test_no_room_anywhere_leaves_it_to_the_siblings(site):
    changes, why = _route(site, {"fed-a": FULL, "fed-b": None}, TOKYO_NIGHT)
    assert changes == {} and "no member has room" in why and "fed-b not answering" in why


def test_room_counts_the_job_size(site):
    small = {"fed-a": MemberCapacity(64, 4), "fed-b": MemberCapacity(4, 1)}
    assert _route(site, small, TOKYO_NIGHT, JobRequest(min_cpus=4))[0] == {"clusters": "fed-b"}
    assert _route(site, small, TOKYO_NIGHT, JobRequest(min_cpus=8))[0] == {"clusters": "fed-a"}
    assert _route(site, small, TOKYO_NIGHT, JobRequest(min_cpus=2, min_nodes=2))[0] == {"clusters": "fed-a"}


def test_before_the_first_read_nothing_changes(site):
    assert _route(site, {}, TOKYO_NIGHT)[0] == {}


def test_pinned_jobs_and_other_classes_are_not_routed(tmp_path, site):
    assert _route(site, {"fed-a": ROOM, "fed-b": ROOM}, TOKYO_NIGHT, JobRequest(clusters="fed-a")) is None
    # a -M list of several members narrows the choice to them
    three = _site(tmp_path, members=[*FEDERATION["members"], {"cluster": "fed-c", "timezone": "Asia/Tokyo"}])
    view = {"fed-a": ROOM, "fed-b": MemberCapacity(8, 1), "fed-c": ROOM}
    assert _route(three, view, TOKYO_NIGHT)[0] == {"clusters": "fed-c"}  # most free CPUs at night
    assert _route(three, view, TOKYO_NIGHT, JobRequest(clusters="fed-a,fed-b"))[0] == {"clusters": "fed-b"}
    only_web = _site(tmp_path, portable_classes=["web"])
    web = next(c for c in only_web.policy.workload_classes if c.name == "web")
    batch = next(c for c in only_web.policy.workload_classes if c.name == "batch")
    assert _route(only_web, {"fed-a": ROOM, "fed-b": ROOM}, TOKYO_NIGHT, wclass=batch) is None
    assert _route(only_web, {"fed-a": ROOM, "fed-b": ROOM}, TOKYO_NIGHT, wclass=web)[0] == {"clusters": "fed-b"}


def test_admit_sets_clusters_with_its_reason(site):
    snap = Snapshot(taken_at=TOKYO_NIGHT.timestamp())
    options = AdmissionOptions(federation=FederationView({"fed-a": ROOM, "fed-b": ROOM}, 1.0))
    decision = admit(JobRequest(min_cpus=1, user_id=0), snap, site, options)
    assert decision.changes["clusters"] == "fed-b" and "federation" in decision.kinds
    assert "follow-the-sun" in decision.reason
    assert "clusters" not in admit(JobRequest(min_cpus=1), snap, load_site("demo"), options).changes  # no federation
    assert "clusters" not in admit(JobRequest(min_cpus=1), Snapshot.empty(), site, options).changes  # no time yet


def test_site_checks(tmp_path):
    with pytest.raises(SiteError, match="'hetsched-demo'.*is not a member"):
        doc = yaml.safe_load(resolve_site_path("demo").read_text())
        doc["federation"] = FEDERATION
        (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
        load_site(tmp_path / "s.yaml")
    with pytest.raises(SiteError, match="unknown workload class 'nope'"):
        _site(tmp_path, portable_classes=["nope"])
    with pytest.raises(SiteError, match="unknown IANA time zone"):
        _site(tmp_path, members=[{"cluster": "fed-a", "timezone": "Mars/Olympus"}, {"cluster": "fed-b"}])


def test_capacity_from_sinfo():
    # -N lists a node once per partition: counted once; %C is allocated/idle/other/total
    text = "x86n1|0/16/0/16\nx86n1|0/16/0/16\nx86n2|12/4/0/16\narmn1|64/0/0/64\ndown1|0/0/32/32\n"
    assert parse_capacity(text) == MemberCapacity(free_cpus=20, free_nodes=2)
    with pytest.raises(ValueError, match="row 1"):
        parse_capacity("CLUSTER: fed-a\n")
