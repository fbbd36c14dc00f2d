"""A script's #HETSCHED intent line through the daemon's protocol and admission (pure: no Slurm)."""

from __future__ import annotations

import datetime as dt
import json

from slurm_plugin.admission import admit
from slurm_plugin.daemon.protocol import parse_request
from slurm_plugin.intent.admission import intent_fields
from slurm_plugin.site import load_site, resolve_site_path
from slurm_plugin.snapshot import Snapshot

NOW = dt.datetime(2026, 12, 1, 16, 0, tzinfo=dt.timezone.utc)


def request(intent: str, **job):
    return parse_request(json.dumps({"v": 1, "op": "submit", "job": {"intent": intent, **job}}).encode())


def test_intent_fields_become_job_desc_changes():
    site = load_site(resolve_site_path("demo"))
    changes, why = intent_fields(request("train on 4 GPUs, a100 or h100, for 2 hours, finish by Friday 18:00"),
                                 site, NOW)
    assert changes == {"features": "h100|a100", "comment": "class=ai-training deadline=2026-12-04T18:00",
                       "time_limit": 120}
    assert "class ai-training" in why
    # what the user set on the command line wins
    changes, _ = intent_fields(request("train on 4 GPUs, a100, for 2 hours", time_limit=30, features="a100"), site,
                               NOW)
    assert "time_limit" not in changes and "features" not in changes


def test_admission_refuses_an_impossible_intent_and_a_bad_one_with_the_column():
    site = load_site(resolve_site_path("demo"))
    refused = admit(request("render 500 frames at 3 hours each under 1 EUR"), Snapshot.empty(), site)
    assert refused.action == "reject" and "over the bound 1 EUR" in refused.reason and refused.cause == "intent"
    bad = admit(request("train on four GPUs"), Snapshot.empty(), site)
    assert bad.action == "reject" and "column 10" in bad.reason
    ok = admit(request("simulate on 4 cores for 1 hour"), Snapshot.empty(), site)
    assert ok.action == "accept" and ok.changes["time_limit"] == 60 and "intent" in ok.kinds
