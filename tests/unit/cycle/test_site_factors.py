"""A cycle sends slurmctld only the SiteFactors that change, and remembers what Slurm took."""

from __future__ import annotations

from slurm_plugin.cycle.decide import unchanged_site_factors_dropped
from slurm_plugin.cycle.site_factors import applied_site_factors, load_site_factors, save_site_factors
from slurm_plugin.decision import Decision, PowerNodes, SetSiteFactor
from slurm_plugin.decision.applier import Applied
from slurm_plugin.snapshot import JobState, Snapshot

SNAP = Snapshot(jobs=tuple(JobState(i, "PENDING") for i in (1, 2, 3, 4)) + (JobState(9, "RUNNING"),))


def test_a_job_that_already_has_its_sitefactor_is_left_out_and_a_changed_one_is_sent():
    decision = Decision((SetSiteFactor((1, 2), 500, "band 5"), SetSiteFactor((3, 4), 100, "band 1"),
                         PowerNodes(("n1",), "POWER_UP", "backlog")))
    out, remember = unchanged_site_factors_dropped(decision, {1: 500, 2: 100, 3: 100, 4: 100, 9: 700}, SNAP)
    assert [(a.job_ids, a.site_factor) for a in out.actions if isinstance(a, SetSiteFactor)] == [((2,), 500)]
    assert any(isinstance(a, PowerNodes) for a in out.actions)  # other actions pass untouched
    assert remember == {1: 500, 2: 500, 3: 100, 4: 100}  # the running job 9 is forgotten


def test_the_first_cycle_sends_everything():
    decision = Decision((SetSiteFactor((1, 2), 500, "band 5"),))
    out, remember = unchanged_site_factors_dropped(decision, {}, SNAP)
    assert out.actions == decision.actions and remember == {1: 500, 2: 500}


def test_jobs_slurm_did_not_update_are_sent_again(tmp_path):
    a, b = SetSiteFactor((1, 2), 500, "band 5"), SetSiteFactor((3,), 100, "band 1")
    results = [Applied(a, ok=False, error="1 of 2", failed_ids={2: "Invalid job id specified"}),
               Applied(b, ok=False, error="slurmctld refused")]
    kept = applied_site_factors({1: 500, 2: 500, 3: 100, 4: 100}, results)
    assert kept == {1: 500, 4: 100}
    save_site_factors(tmp_path / "sf.json", kept)
    assert load_site_factors(tmp_path / "sf.json") == kept
    assert load_site_factors(tmp_path / "missing.json") == {}


def test_an_unchanged_memory_is_not_rewritten(tmp_path):
    path = tmp_path / "sf.json"
    assert save_site_factors(path, {1: 4000}, loaded={})
    before = path.stat().st_mtime_ns, path.stat().st_ino
    assert not save_site_factors(path, {1: 4000}, loaded=load_site_factors(path))
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == before
    assert save_site_factors(path, {1: 4100}, loaded={1: 4000})
    assert load_site_factors(path) == {1: 4100}
