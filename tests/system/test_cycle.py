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
