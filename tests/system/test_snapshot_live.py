"""Snapshots on the real cluster: what they cost slurmctld, read back from slurmctld's own ``sdiag``."""

from __future__ import annotations

import pytest

from slurm_plugin.slurm.sdiag import RpcStat, rpc_stats
from slurm_plugin.snapshot.collect import JobsCache, collect_snapshot

pytestmark = pytest.mark.system


def _job_info_rpcs(slurm) -> int:
    return rpc_stats(slurm.run("sdiag").stdout)[0].get("REQUEST_JOB_INFO", RpcStat(0, 0, 0)).count


def test_the_job_queue_is_read_only_when_the_cached_copy_is_too_old(slurm):
    """The daemon's snapshots reuse the job queue they read for ``jobs_refresh_s``: node and partition state
    are read every time, ``squeue --json`` (REQUEST_JOB_INFO, every job record) only when the copy is older."""
    job = slurm.sbatch("--hold", "-o", "/dev/null", wrap="true")
    try:
        cache = JobsCache(max_age_s=3600)
        before = _job_info_rpcs(slurm)
        first = collect_snapshot(slurm, cache=cache)
        second = collect_snapshot(slurm, cache=cache)
        assert _job_info_rpcs(slurm) - before == 1  # one queue read for two snapshots
        assert first.jobs_taken_at is None and second.jobs_taken_at == first.taken_at < second.taken_at
        assert job in {j.job_id for j in second.jobs}
        cache.max_age_s = 0.0
        third = collect_snapshot(slurm, cache=cache)
        assert _job_info_rpcs(slurm) - before == 2 and third.jobs_taken_at is None
    finally:
        slurm.cancel(job)
