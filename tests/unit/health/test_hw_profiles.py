"""Vendor profiles: the shipped data loads, and the pure comparison of wanted, current and pending BIOS values."""

from __future__ import annotations

import pytest

from slurm_plugin.hw.profiles import Profile, ProfileError, changes, compare, load_profiles, profiles_of
from slurm_plugin.site import load_site

PROF = Profile("p", "", "doc", {"ProcTurboMode": "Enabled", "LogicalProc": "Disabled", "BootMode": "Uefi"})


def test_shipped_profiles_load_with_sources():
    profiles = load_profiles()
    assert {"dell-poweredge-hpc", "hpe-proliant-hpc", "sushy-test"} <= set(profiles)
    assert all(p.source and p.bios for p in profiles.values())


def test_compare_tells_ok_pending_and_drift_apart():
    current = {"ProcTurboMode": "Disabled", "LogicalProc": "Enabled", "BootMode": "uefi"}
    pending = {"ProcTurboMode": "Enabled"}
    states = {s.attribute: s.state for s in compare(PROF, current, pending)}
    assert states == {"ProcTurboMode": "pending", "LogicalProc": "drift", "BootMode": "ok"}
    assert changes(PROF, current, pending) == {"LogicalProc": "Disabled"}  # only what is not already set


def test_unknown_profile_in_a_site_is_named():
    site = load_site("demo")
    group = site.node_groups[0].model_copy(update={"hw_profile": "nope"})
    cluster = site.clusters[0].model_copy(update={"node_groups": (group, *site.clusters[0].node_groups[1:])})
    bad = site.model_copy(update={"clusters": (cluster,)})
    with pytest.raises(ProfileError, match="hw_profile 'nope' is not a profile"):
        profiles_of(bad)
