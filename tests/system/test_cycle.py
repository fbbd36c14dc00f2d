"""The daemon's cycle on the real cluster: a flexible pending job is moved to the architecture with room, a
pinned one never is, and every move is journaled with its reason."""

from __future__ import annotations

import pytest

from slurm_plugin.cycle import CycleConfig, CycleRunner
from slurm_plugin.decision import Journal, MoveJob
from slurm_plugin.site import load_site

pytestmark = pytest.mark.system


def pack_cycle(site, slurm, state_dir) -> tuple[list[MoveJob], list]:
    """One daemon cycle with packing only (no reshape, no power); its MoveJob actions and applied results."""
    decision, results = CycleRunner(site, slurm, CycleConfig(reshape=False, power=False), state_dir).run_once()
    return [a for a in decision.actions if isinstance(a, MoveJob)], results


def test_flexible_job_moves_to_the_free_architecture_and_pinned_job_stays(cluster, slurm, tmp_path):
    site = load_site(cluster.state()["site_path"])
    fill = [slurm.sbatch("-p", "batch", "--constraint=x86_64", "-n", "16", "--time=3", "--output=/dev/null",
                         wrap="sleep 90") for _ in range(2)]
    for j in fill:
        slurm.wait_job(j, until=("RUNNING",), timeout=60)
    # as admission leaves a job it routed to x86 at submit time: the user allowed aarch64|x86_64
    flexible = slurm.sbatch("-p", "batch", "--constraint=x86_64", "-n", "4", "--time=3", "--output=/dev/null",
                            "--comment=hetsched:class=web,flex=aarch64|x86_64", wrap="sleep 1")
    pinned = slurm.sbatch("-p", "batch", "--constraint=x86_64", "-n", "4", "--time=3", "--output=/dev/null",
                          wrap="sleep 1")
    try:
        assert slurm.show_job(flexible)["JobState"] == "PENDING"
        moves, results = pack_cycle(site, slurm, tmp_path)
        assert [m.job_id for m in moves] == [flexible], moves
        assert moves[0].features == "aarch64" and all(r.ok for r in results)
        done = slurm.wait_job(flexible, timeout=60)
        assert done["JobState"] == "COMPLETED" and done["NodeList"].startswith("armn")
        assert slurm.show_job(pinned)["JobState"] == "PENDING"
        assert slurm.show_job(pinned)["Features"] == "x86_64"
        [entry] = Journal(tmp_path / "journal.jsonl").about_job(flexible)
        assert entry["kind"] == "move_job" and entry["reason"].startswith("pack (")
    finally:
        slurm.cancel(*fill, flexible, pinned)


def test_a_policy_file_ranks_the_live_queue_as_it_names(cluster, slurm, tmp_path):
    """`hetsched cycle once --policy-file F` (the command itself) with ranking sjf: the pending jobs' SiteFactor
    in slurmctld follows their time limits, shortest highest; the journal records the typed cause."""
    import json
    import os
    import subprocess
    import sys

    policy = tmp_path / "policy.yaml"
    policy.write_text("ranking: {name: sjf, age_floor: false}\npacking: {enabled: false}\n"
                      "scaling: {name: always-on}\nreshape: false\n")
    blocker = slurm.sbatch("-p", "riscv", "-n", "64", "--time=10", "--output=/dev/null", wrap="sleep 120")
    jobs: list[int] = []
    try:
        slurm.wait_job(blocker, until=("RUNNING",), timeout=60)
        jobs = [slurm.sbatch("-p", "riscv", "-n", "1", f"--time={m}", "--output=/dev/null", wrap="true")
                for m in (240, 1, 30)]
        env = {**os.environ, "SLURM_CONF": str(cluster.conf)}
        out = subprocess.run([sys.executable, "-m", "slurm_plugin", "cycle", "once", cluster.state()["site_path"],
                              "--policy-file", str(policy), "--state-dir", str(tmp_path / "state"), "--json"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        rows = json.loads(out.stdout)
        assert rows and all(r["kind"] == "site_factor" and r["cause"] == "RANKING" for r in rows), rows
        factor = slurm.site_factors(*jobs)
        assert factor[jobs[1]] > factor[jobs[2]] > factor[jobs[0]], factor  # 1 min, 30 min, 240 min
        entries = Journal(tmp_path / "state" / "journal.jsonl").about_job(jobs[1])
        assert [e["cause"] for e in entries] == ["RANKING"]
    finally:
        slurm.cancel(blocker, *jobs)
