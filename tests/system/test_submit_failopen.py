"""Fail-open through real sbatch: daemon absent, hung (SIGSTOP), answering garbage, and chaos while submitting."""

from __future__ import annotations

import collections
import logging
import random
import re
import threading
import time
from pathlib import Path

import pytest

from slurm_plugin.cluster.procs import read_pid
from tests.system.test_submit_support import GarbageDaemon, SubmitEnv, submit_env

pytestmark = pytest.mark.system
TIMEOUT_MS = 50  # hetsched-shim.json default that start_cluster renders
CHAOS_SECONDS = 20
log = logging.getLogger(__name__)


env = submit_env(start_daemon=False)


def run_queue_ms(pid: int) -> float:
    """Milliseconds all of ``pid``'s threads have waited, runnable, for a CPU (Linux schedstat)."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[1])
        except (OSError, IndexError, ValueError):
            pass  # a thread that ended meanwhile
    return total / 1e6


def test_absent_daemon_accepts_unchanged_and_logs_one_line(env):
    env.daemon.kill()
    offset = env.ctld_log_size()
    sub = env.sbatch("--gres=gpu:1", "-p", "gpu", "--constraint=aarch64|x86_64")
    assert sub.code == 0, sub.stderr
    job = env.job(sub.job_id)
    assert (job["Partition"], job["Features"]) == ("gpu", "aarch64|x86_64")
    lines = [ln for ln in env.ctld_log_since(offset).splitlines() if "hetsched shim" in ln]
    assert len(lines) == 1 and "job accepted unchanged (fail=open)" in lines[0], lines


def test_hung_daemon_delays_by_at_most_the_timeout(env):
    """What a hung daemon costs a submission is what the shim waits inside slurmctld, as the shim itself logs
    it ("receive: timeout after X ms"): at most the timeout + 10 ms, plus the time slurmctld's threads waited
    for a CPU meanwhile (a timeout cannot fire while its thread is off the CPU: a loaded machine)."""
    env.daemon.start()
    env.daemon.hang()
    ctld = read_pid(env.root / "run" / "hs-slurmctld.pid")
    assert ctld, "no slurmctld pid file"
    waits = []
    try:
        for _ in range(7):
            offset, queued = env.ctld_log_size(), run_queue_ms(ctld)
            sub = env.sbatch("--constraint=aarch64|x86_64")
            assert sub.code == 0, sub.stderr
            slack = run_queue_ms(ctld) - queued
            lines = re.findall(r"receive: timeout after ([0-9.]+) ms; job accepted unchanged", env.ctld_log_since(offset))
            assert len(lines) == 1, env.ctld_log_since(offset)
            waits.append((float(lines[0]), slack))
    finally:
        env.daemon.resume()
    log.info("shim waits (ms, slurmctld's run-queue ms meanwhile): %s", waits)
    for waited, slack in waits:
        assert TIMEOUT_MS * 0.95 <= waited <= TIMEOUT_MS + 10 + slack, waits


def test_garbage_answers_accept_unchanged(env):
    env.daemon.kill()
    garbage = GarbageDaemon(env.daemon.socket)
    try:
        sub = env.sbatch("--constraint=aarch64|x86_64")
        assert sub.code == 0, sub.stderr
        assert env.job(sub.job_id)["Features"] == "aarch64|x86_64"
    finally:
        garbage.close()


# What each chaos job asks for, and what its partition/features may become: the user's own values, or what
# the policy may choose within them. Anything else is a silent change the user did not allow.
CHAOS_JOBS = [
    (("--constraint=aarch64|x86_64",), {("batch", "aarch64|x86_64"), ("batch", "aarch64"), ("batch", "x86_64")}),
    (("-p", "x86", "--constraint=x86_64"), {("x86", "x86_64")}),
    (("--gres=gpu:1", "-p", "gpu"), {("gpu", "(null)")}),
    (("-p", "arm"), {("arm", "(null)")}),
]


def test_chaos_no_rejection_no_loss_no_silent_change(env):
    """For CHAOS_SECONDS, one thread submits while another kills, starts, hangs, resumes and garbles the daemon
    in a shuffled cycle. Every submission must succeed, every job must exist, and every job's partition and
    features must be what its user asked for or a choice the user allowed."""
    env.daemon.start()
    results, done, stop = [], collections.Counter(), threading.Event()

    def submit():
        rng = random.Random(7)
        while not stop.is_set():
            args, allowed = rng.choice(CHAOS_JOBS)
            results.append((env.sbatch(*args), allowed))
            time.sleep(0.02)

    def chaos():
        rng = random.Random(11)
        garbage = None
        replies = [b"garbage\n", b"{}\n", b"\x00\xff\n", b'{"v":1,"ok":true,"action":"accept","set":{"partition":"npu;x"}}\n']
        cycle = ["hang", "resume", "kill", "start", "garble", "ungarble", "restart"]
        while not stop.is_set():
            for action in rng.sample(cycle, len(cycle)):
                if action == "kill":
                    env.daemon.kill()
                elif action in ("start", "restart") and garbage is None:
                    env.daemon.start(wait_for_snapshot=False)
                elif action == "hang":
                    env.daemon.hang()
                elif action == "resume":
                    env.daemon.resume()
                elif action == "garble" and garbage is None:
                    env.daemon.kill()
                    garbage = GarbageDaemon(env.daemon.socket, rng.choice(replies))
                elif action == "ungarble" and garbage is not None:
                    garbage.close()
                    garbage = None
                else:
                    continue
                done[action] += 1
                time.sleep(rng.uniform(0.1, 0.8))
                if stop.is_set():
                    break
        if garbage:
            garbage.close()
        env.daemon.resume()

    threads = [threading.Thread(target=submit), threading.Thread(target=chaos)]
    for t in threads:
        t.start()
    time.sleep(CHAOS_SECONDS)
    stop.set()
    for t in threads:
        t.join(60)
    env.daemon.start()

    log.info("chaos: %d submissions, actions %s", len(results), dict(done))
    assert all(done[a] for a in ("kill", "start", "hang", "resume", "garble")), done
    refused = [s for s, _ in results if s.code != 0]
    assert len(results) >= 100 and refused == [], [s.stderr for s in refused]
    for sub, allowed in results:
        job = env.job(sub.job_id)
        assert job, f"job {sub.job_id} lost"
        assert (job["Partition"], job["Features"]) in allowed, (sub.job_id, job["Partition"], job["Features"])
