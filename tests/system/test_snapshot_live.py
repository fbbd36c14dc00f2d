"""Snapshots on the real cluster: what they cost slurmctld, read back from slurmctld's own ``sdiag``."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from slurm_plugin.slurm.sdiag import RpcStat, rpc_stats
from slurm_plugin.snapshot.collect import JobsCache, collect_snapshot
from slurm_plugin.snapshot.shared import QueueFile

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


def test_the_daemons_queue_comes_from_the_cycles_file(slurm, cluster, tmp_path):
    """``hetsched cycle once --queue-file F`` publishes the queue it read; the daemon's cache (``queue_file: F``)
    then takes its jobs from F without a REQUEST_JOB_INFO of its own while F is young enough, and reads Slurm
    again once F is older than its period."""
    job = slurm.sbatch("--hold", "-o", "/dev/null", wrap="true")
    try:
        state = tmp_path / "state"
        state.mkdir(mode=0o755)
        path = state / "queue.pickle"
        out = subprocess.run([sys.executable, "-m", "slurm_plugin", "cycle", "once", "--site",
                              str(cluster.root / "site.yaml"), "--state-dir", str(state), "--dry-run", "--no-pack",
                              "--no-power", "--no-reshape", "--queue-file", str(path)],
                             env={**os.environ, "SLURM_CONF": str(cluster.conf)}, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        published = QueueFile(path).read(max_age_s=3600, now=time.time())
        assert published is not None and job in {j.job_id for j in published[0]}
        cache = JobsCache(max_age_s=3600, shared=QueueFile(path))
        before = _job_info_rpcs(slurm)
        snap = collect_snapshot(slurm, cache=cache)
        assert _job_info_rpcs(slurm) == before  # the queue came from the file
        assert job in {j.job_id for j in snap.jobs} and snap.jobs_taken_at == published[1]
        assert (cache.reads, cache.shared_reads) == (0, 1)
        time.sleep(1.5)
        cache.max_age_s = cache.shared_max_age_s = 1.0  # the file is now older than it may be: Slurm is asked
        collect_snapshot(slurm, cache=cache)
        assert _job_info_rpcs(slurm) == before + 1 and cache.reads == 1
    finally:
        slurm.cancel(job)
