"""The queue file the cycle publishes and the daemon's snapshot worker reads (snapshot/shared.py): the jobs come
back as written, only while young enough, and never from a file someone else could have written."""

from __future__ import annotations

import logging
import os

import pytest

from slurm_plugin.snapshot.collect import JobsCache
from slurm_plugin.snapshot.model import JobState
from slurm_plugin.snapshot.shared import QueueFile

JOBS = (JobState(job_id=7, state="PENDING", partition="batch", priority=4000),
        JobState(job_id=8, state="COMPLETED", partition="batch"))


@pytest.fixture
def queue(tmp_path):
    d = tmp_path / "state"
    d.mkdir(mode=0o755)
    return QueueFile(d / "queue.pickle")


def test_the_jobs_come_back_as_written_while_young_enough(queue):
    queue.publish(JOBS, read_at=1000.0)
    assert oct(queue.path.stat().st_mode & 0o777) == "0o640"
    assert queue.read(max_age_s=30, now=1030.0) == (JOBS, 1000.0)
    assert queue.read(max_age_s=30, now=1030.5) is None  # older than the daemon's period: it reads Slurm


def test_missing_corrupt_or_foreign_files_are_not_used(queue, caplog):
    assert queue.read(30, 0.0) is None  # missing
    queue.path.write_bytes(b"not a pickle")
    os.chmod(queue.path, 0o640)
    with caplog.at_level(logging.WARNING):
        assert queue.read(30, 0.0) is None
    assert "unreadable" in caplog.text
    queue.publish(JOBS, 0.0)
    os.chmod(queue.path, 0o660)  # group-writable: someone else could have put a pickle there
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert queue.read(30, 0.0) is None
    assert "writable by group or others" in caplog.text
    os.chmod(queue.path, 0o640)
    os.chmod(queue.path.parent, 0o777)  # a directory others may write: they could swap the file
    assert queue.read(30, 0.0) is None
    os.chmod(queue.path.parent, 0o755)
    assert queue.read(30, 0.0) == (JOBS, 0.0)
    if os.geteuid() == 0:  # another user's file (only root can make one here)
        os.chown(queue.path, 12345, -1)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert queue.read(30, 0.0) is None
        assert "belongs to uid 12345" in caplog.text


def test_a_refusal_is_logged_once_per_reason(queue, caplog):
    queue.path.write_bytes(b"junk")
    os.chmod(queue.path, 0o640)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            queue.read(30, 0.0)
    assert caplog.text.count("not used") == 1


def test_the_daemons_cache_takes_a_newer_published_queue_instead_of_reading_slurm(queue):
    queue.publish(JOBS, read_at=1000.0)
    cache = JobsCache(max_age_s=30, shared=queue)
    client = object()  # never used: the published queue is young enough
    assert cache.jobs(client, now=1010.0) == (JOBS, 1000.0)
    assert (cache.reads, cache.shared_reads) == (0, 1)
    assert cache.jobs(client, now=1025.0) == (JOBS, 1000.0)  # the cached copy, still young
    assert cache.shared_reads == 1


class Slurm:
    """Counts the daemon's own queue reads (read_jobs runs `squeue` through ``run``)."""

    def __init__(self):
        self.calls = 0

    def run(self, *args, **kw):
        raise AssertionError("the cache must not read Slurm here")


def test_between_publishes_the_held_copy_is_kept_up_to_the_files_age_limit(queue):
    """The daemon's period (30 s) is the cycle's: the file is 30-35 s old just before the next publish; the
    cache keeps its copy (the same queue) up to ``shared_max_age_s`` instead of reading Slurm then."""
    queue.publish(JOBS, read_at=1000.0)
    cache = JobsCache(max_age_s=30, shared=queue, shared_max_age_s=60)
    assert cache.jobs(Slurm(), now=1001.0) == (JOBS, 1000.0)
    assert cache.jobs(Slurm(), now=1034.0) == (JOBS, 1000.0)  # expired by 30 s, the file not newer: kept
    newer = (JOBS[0],)
    queue.publish(newer, read_at=1033.0)
    assert cache.jobs(Slurm(), now=1036.0) == (newer, 1033.0) and cache.shared_reads == 2
