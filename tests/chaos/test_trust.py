"""Trust boundaries of the submit path on a real cluster (issue 11, items 1, 9, 10, 13; docs/trust.md).

Every attack runs as an unprivileged user (``nobody``) with the real sbatch/scontrol against a real slurmctld
that loads the real shim, and the real admission daemon. Slurm here has no accounting (as the demo site), so
``--qos`` and ``--account`` are never validated by Slurm and must not raise a job's priority either.

A job's priority is read from ``squeue %Q`` on jobs held back by ``--begin`` (pending, priority computed):
a plain job is 5, a gold/ai-training band 4,120,005; anything at or above ESCALATED is an escalation.
The figures the issue asks for (escalations, jobs refused by Slurm because of the suite, submissions lost)
are tallied over the module and checked by the last test.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from slurm_plugin.admission.classify import BAND_SPAN
from slurm_plugin.daemon import DaemonConfig
from slurm_plugin.daemon.process import DaemonProcess, ask

from .conftest import start_cluster

pytestmark = pytest.mark.system
NOBODY = 65534
STRANGER = 65533  # a uid the daemon does not allow
ESCALATED = 500 * BAND_SPAN  # the lowest granted band above bronze (silver) as a SiteFactor
MODEL = Path(__file__).resolve().parents[2] / "slurm_plugin" / "rank" / "models" / "dqn_default.npz"
TALLY = {"escalations": 0, "refused": 0, "submitted": 0, "lost": 0}


class TrustDaemon(DaemonProcess):
    """The real daemon, also serving ``nobody`` (an allowed user that is not slurmctld) on a 0666 socket, so
    the per-user limits and the refusal log can be driven by real unprivileged clients."""

    def argv(self) -> list[str]:
        cfg = self.root / "etc" / "hetsched-trust.yaml"
        settings = {"socket_mode": "0666", "slurmctld_user": "root", "max_connections_per_user": 8}
        cfg.write_text(yaml.safe_dump({k: v for k, v in settings.items() if k in DaemonConfig.model_fields}))
        return [*super().argv(), "--allow-user", "nobody", "--config", str(cfg)]


@pytest.fixture(scope="module")
def env():
    cluster = start_cluster("trust", job_submit=True)
    daemon = TrustDaemon(cluster.root)
    daemon.start()
    yield cluster, daemon
    daemon.stop()
    cluster.client().run("scancel", "--user", "nobody", check=False)
    cluster.client().run("scancel", "--user", "root", check=False)
    cluster.down()


def as_user(cluster, *argv: str, uid: str = "nobody") -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", uid, "--", "env", f"SLURM_CONF={cluster.conf}", *argv],
                          capture_output=True, text=True, timeout=60, cwd="/tmp")


def submit(cluster, *args: str, uid: str = "nobody", later: bool = True) -> int | None:
    """sbatch as ``uid``; ``later``: held back an hour by --begin (pending with its priority computed)."""
    argv = ["sbatch", "--parsable", "-o", "/dev/null", "-D", "/tmp", *(["--begin=now+3600"] if later else []),
            *args, "--wrap", "true"]
    proc = as_user(cluster, *argv, uid=uid) if uid != "root" else cluster.client().run(*argv, check=False)
    TALLY["submitted"] += 1
    if proc.returncode:
        TALLY["refused"] += 1
        return None
    job_id = int(proc.stdout.strip().split(";")[0])
    if not cluster.client().show_job(job_id):
        TALLY["lost"] += 1
    return job_id


def priority(cluster, job_id: int) -> int:
    out = cluster.client().run("squeue", "-h", "-j", str(job_id), "-o", "%Q").stdout.strip()
    return int(out)


def escalated(cluster, job_id: int) -> bool:
    value = priority(cluster, job_id)
    TALLY["escalations"] += value >= ESCALATED
    return value >= ESCALATED


def run_cycle(cluster, tmp_path: Path) -> str:
    """One real ``hetsched cycle once`` with the bundled model (ranking only)."""
    out = subprocess.run([sys.executable, "-m", "slurm_plugin", "cycle", "once", str(cluster.root / "site.yaml"),
                          "--model", str(MODEL), "--state-dir", str(tmp_path), "--no-pack", "--no-reshape",
                          "--no-power"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "SLURM_CONF": str(cluster.conf)})
    assert out.returncode == 0, out.stderr
    return out.stdout


# ------------------------------------------------------------------------------------- item 1: escalation
@pytest.mark.parametrize("claim", ["--qos=gold", "--comment=class=ai-training", "--comment=tier=gold",
                                   "--wckey=ai-training", "--account=ai-training",
                                   "--comment=hetsched:class=ai-training,tier=gold"])
def test_a_claim_at_submission_never_raises_priority(env, claim):
    cluster, _ = env
    job = submit(cluster, claim)
    assert job is not None
    assert not escalated(cluster, job), f"{claim}: priority {priority(cluster, job)}"


def test_root_still_gets_the_class_it_names(env):
    """The control: the same claim by root (entitled to every class) is granted, so the checks above can fail."""
    cluster, _ = env
    job = submit(cluster, "--comment=class=ai-training", uid="root")
    assert priority(cluster, job) >= 1030 * BAND_SPAN


def test_a_comment_edited_after_submission_is_not_believed_by_the_cycle(env, tmp_path):
    cluster, _ = env
    plain = submit(cluster)
    control = submit(cluster, "--comment=class=ai-training", uid="root")
    for comment in ("class=ai-training,tier=gold", "hetsched:class=ai-training,tier=gold"):
        edit = as_user(cluster, "scontrol", "update", f"jobid={plain}", f"comment={comment}")
        assert edit.returncode == 0, edit.stderr
        assert as_user(cluster, "scontrol", "update", f"jobid={plain}", "qos=gold").returncode in (0, 1)
        run_cycle(cluster, tmp_path)
        assert not escalated(cluster, plain), f"comment={comment}: priority {priority(cluster, plain)}"
    assert priority(cluster, control) >= 1030 * BAND_SPAN  # the cycle did rank, and kept root's band


# ------------------------------------------------------------------------------- item 9: forged listener
FORGED = b'{"v":1,"ok":true,"action":"accept","set":{"site_factor":999999999,"partition":"gpu"},"reason":"x"}\n'


def _forged_listener(path: Path, count_file: Path) -> subprocess.Popen:
    """An unprivileged (nobody) listener on the daemon's socket path answering forged decisions."""
    code = (f"import os,socket; os.setgid({NOBODY}); os.setuid({NOBODY}); s=socket.socket(socket.AF_UNIX)\n"
            f"s.bind({str(path)!r}); s.listen(8); print('up', flush=True)\n"
            "while True:\n"
            "    c,_=s.accept(); c.recv(65536); c.sendall(%r)\n"
            f"    open({str(count_file)!r},'a').write('x')\n") % FORGED
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "up"
    return proc


def test_forged_listener_in_a_writable_directory_is_not_believed(env, tmp_path):
    cluster, daemon = env
    run_dir = daemon.socket.parent
    daemon.stop()
    run_dir.chmod(0o777)  # the admin mistake the attack needs
    count = run_dir / "asked"
    listener = _forged_listener(daemon.socket, count)
    try:
        job = submit(cluster, "--gres=gpu:1")
        assert job is not None
        assert priority(cluster, job) < ESCALATED and not count.exists()  # never even asked
        assert cluster.client().show_job(job)["Partition"] == "gpu"  # routed by the static table instead
        log = (cluster.root / "log" / "slurmctld.log").read_text(errors="replace")
        assert "untrusted socket" in log
    finally:
        listener.kill()
        listener.wait(5)
        daemon.socket.unlink(missing_ok=True)
        count.unlink(missing_ok=True)
        run_dir.chmod(0o755)
        daemon.start()


def test_daemon_refuses_a_socket_directory_others_can_write(env, tmp_path):
    cluster, daemon = env
    open_dir = cluster.root / "run-open"
    open_dir.mkdir(exist_ok=True)
    open_dir.chmod(0o777)
    (open_dir / "d.sock").unlink(missing_ok=True)  # left by an earlier run of a daemon without the check
    out = subprocess.run([sys.executable, "-m", "slurm_plugin", "daemon", "run", "--socket",
                          str(open_dir / "d.sock"), "--site", str(cluster.root / "site.yaml"), "--slurm-conf",
                          str(cluster.conf)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "writable by others" in out.stderr
    assert not (open_dir / "d.sock").exists()


# ------------------------------------------------------------------------------ item 10: fail-open routing
@pytest.mark.parametrize("state", ["down", "hung"])
def test_gpu_jobs_are_routed_without_the_daemon(env, state):
    cluster, daemon = env
    if state == "down":
        daemon.stop()
    else:
        daemon.hang()
    try:
        asks = {"--gres=gpu:1": "gpu", "--gpus=1": "gpu", "--gpus-per-node=1": "gpu", "--gres=npu:1": "npu"}
        for args, partition in asks.items():
            job = submit(cluster, args, "-t", "1", later=False)
            assert job is not None, f"{args} refused with the daemon {state}"
            assert cluster.client().show_job(job)["Partition"] == partition
        ran = cluster.client().wait_job(job, timeout=90)  # not only accepted: it runs
        assert ran["JobState"] == "COMPLETED", ran
    finally:
        if state == "down":
            daemon.start()
        else:
            daemon.resume()


def test_gpus_per_job_is_routed_by_the_daemon(env):
    cluster, _ = env
    job = submit(cluster, "--gpus=2")
    assert job is not None and cluster.client().show_job(job)["Partition"] == "gpu"


# ---------------------------------------------------------------------------------- item 13: daemon limits
def test_slow_writer_is_cut_off_after_the_read_timeout(env):
    _, daemon = env
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(daemon.socket))
        started = time.monotonic()
        s.settimeout(0.25)
        reply = b""
        for byte in b'{"v": 1, "op": "submit", "job": {}}':
            try:
                s.sendall(bytes([byte]))
            except OSError:  # the daemon replied and closed between our reads: the reply is buffered
                break
            try:
                reply += s.recv(4096)
            except TimeoutError:
                continue
            if reply:
                break
        elapsed = time.monotonic() - started
        if not reply:
            s.settimeout(1.0)
            reply = s.recv(4096)
    assert b"not received in time" in reply and elapsed < 2.5  # read_timeout_s 1.0, for the whole request


def test_huge_integer_and_forged_log_lines(env):
    _, daemon = env
    big = b'{"v": 1, "op": "submit", "job": {"min_cpus": ' + b"7" * 5000 + b"}}\n"
    assert "too many digits" in ask(daemon.socket, raw=big)["error"]
    size = daemon.log.stat().st_size
    reply = ask(daemon.socket, {"gres": "gres:gpu:99", "name": "x\nFORGED-LINE by nobody", "user_id": NOBODY})
    assert reply["action"] == "reject"
    time.sleep(0.3)
    with open(daemon.log, errors="replace") as f:
        f.seek(size)
        lines = f.read().splitlines()
    assert any("x\\nFORGED-LINE" in line for line in lines)
    assert not any(line.startswith("FORGED-LINE") for line in lines)


def _connections_as(uid: int, path: Path, count: int, hold: bool) -> subprocess.Popen:
    code = (f"import os,socket,select,sys; os.setgid({uid}); os.setuid({uid}); held=[]\n"
            f"for _ in range({count}):\n"
            f"    s=socket.socket(socket.AF_UNIX); s.connect({str(path)!r}); held.append(s)\n"
            "    if not " + str(hold) + ": s.recv(200); s.close()\n"
            "busy=sum(1 for s in held if s.fileno()>=0 and select.select([s],[],[],0.3)[0] and b'busy' in s.recv(200))\n"
            "print(busy, flush=True); sys.stdin.read()\n")
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_idle_connections_of_a_user_cannot_lock_out_submissions(env):
    cluster, daemon = env
    holder = _connections_as(NOBODY, daemon.socket, 64, hold=True)
    try:
        assert int(holder.stdout.readline()) == 64 - 8
        job = submit(cluster, "--gres=gpu:1", "--comment=class=ai-training", uid="root")
        assert priority(cluster, job) >= 1030 * BAND_SPAN  # the daemon answered slurmctld (band applied)
    finally:
        holder.stdin.close()
        holder.wait(10)


def test_refused_connections_are_logged_at_a_bounded_rate(env):
    _, daemon = env
    size = daemon.log.stat().st_size
    flood = _connections_as(STRANGER, daemon.socket, 50, hold=False)
    flood.stdout.readline()
    flood.stdin.close()
    flood.wait(10)
    time.sleep(0.3)
    with open(daemon.log, errors="replace") as f:
        f.seek(size)
        refused = [line for line in f.read().splitlines() if "refused a connection" in line]
    assert 1 <= len(refused) <= 2, refused


def test_tally(env):
    """The issue's figures over this module: priority escalations 0, jobs refused because of the suite 0,
    submissions lost 0."""
    print("\ntrust tally:", json.dumps(TALLY))
    assert TALLY["escalations"] == TALLY["refused"] == TALLY["lost"] == 0, TALLY
