"""The apply budget on the real cluster: when the applier's budget is spent the most urgent job updates are in
Slurm, the rest are deferred (results, journal, ``hetsched why``) and the next cycle sends them first."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cycle import CycleConfig, CycleRunner
from slurm_plugin.cycle.steps import CycleBudget
from slurm_plugin.decision import Decision, SetSiteFactor
from slurm_plugin.site import load_site

pytestmark = pytest.mark.system


def test_a_spent_apply_budget_defers_the_least_urgent_updates_to_the_next_cycle(cluster, slurm, tmp_path):
    site = load_site(cluster.state()["site_path"])
    blocker = slurm.sbatch("-p", "riscv", "-n", "64", "--time=10", "--output=/dev/null", wrap="sleep 300")
    jobs: list[int] = []
    try:
        slurm.wait_job(blocker, until=("RUNNING",), timeout=60)
        jobs = [slurm.sbatch("-p", "riscv", "-n", "1", "--time=5", "--output=/dev/null", wrap="true")
                for _ in range(40)]
        top, low, late = jobs[:5], jobs[5:35], jobs[35:]
        bands = [{900: top, 100: low}, {900: top, 100: low, 950: late}, {900: top, 100: low, 950: late}]

        def ranker(snapshot, site, now):
            return Decision(tuple(SetSiteFactor(tuple(ids), v, f"band {v}") for v, ids in bands.pop(0).items()),
                            "rank:test")

        # a budget no command fits in: each apply sends its most urgent command, then defers the rest
        config = CycleConfig(pack=False, reshape=False, power=False, budget=CycleBudget(apply_s=1e-6))
        runner = CycleRunner(site, slurm, config, tmp_path, ranker=ranker)
        _, results = runner.run_once()
        assert slurm.site_factors(*top) == dict.fromkeys(top, 900)  # the highest band went first
        assert slurm.site_factors(*low) == dict.fromkeys(low, 0)
        [deferred] = [r for r in results if r.deferred_ids]
        assert deferred.status == "deferred" and set(deferred.deferred_ids) == set(low)
        assert json.loads((tmp_path / "deferred-jobs.json").read_text()) == sorted(low)
        [entry] = runner.applier.journal.about_job(low[0])
        assert entry["deferred_ids"] and not entry["ok"]
        why = CliRunner().invoke(main, ["why", "job", str(low[0]), "--journal", str(tmp_path / "journal.jsonl")],
                                 env={"SLURM_CONF": str(slurm.conf)})
        assert why.exit_code == 0, why.output
        assert "site_factor: band 100 [DEFERRED to the next cycle (apply budget spent)]" in why.output

        # next cycle: a new, higher band appears, but the carried jobs go first; the new band waits
        _, results = runner.run_once()
        assert slurm.site_factors(*low) == dict.fromkeys(low, 100)
        assert slurm.site_factors(*late) == dict.fromkeys(late, 0)
        assert [set(r.deferred_ids) for r in results if r.deferred_ids] == [set(late)]
        assert not any(set(top) & set(r.action.job_ids) for r in results)  # already set: not sent again

        # a cycle without a budget sends what is left; nothing stays deferred
        runner.config = CycleConfig(pack=False, reshape=False, power=False, budget=CycleBudget(apply_s=600))
        _, results = runner.run_once()
        assert slurm.site_factors(*late) == dict.fromkeys(late, 950) and all(r.ok for r in results)
        assert json.loads((tmp_path / "deferred-jobs.json").read_text()) == []
    finally:
        slurm.cancel(blocker, *jobs)
