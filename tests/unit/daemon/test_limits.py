"""The daemon's input limits (issue 11, item 13), each against a real server on a real Unix socket: a whole
request within read_timeout_s, idle connections capped per uid with slurmctld's uid always served, huge
integers answered, user strings unable to forge log lines, refusals logged at a bounded rate, and a socket
directory others can write refused."""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from .test_server import REQ, Running, ask

from slurm_plugin.daemon import AdmissionServer
from slurm_plugin.daemon.guard import escape, secure_socket_dir
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import Snapshot, SnapshotRefresher

NOBODY = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch uid")


@pytest.fixture
def open_dir():
    """A socket directory nobody can reach (mkdtemp is 0700; 0755 is what the daemon's own dir looks like)."""
    d = Path(tempfile.mkdtemp(prefix="hs-limits-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_read_timeout_is_for_the_whole_request(tmp_path):
    """A writer sending one byte every 0.1 s is cut off read_timeout_s after its first byte (it used to be
    kept as long as bytes kept coming: 12 s for 24 bytes)."""
    run = Running(tmp_path / "run" / "hs.sock", read_timeout_s=0.5)
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(run.server.socket_path))
            started = time.monotonic()
            for byte in REQ[:-1]:
                try:
                    s.send(bytes([byte]))
                except OSError:
                    break
                readable, _, _ = select.select([s], [], [], 0.1)
                if readable or time.monotonic() - started > 4:
                    break
            cut = time.monotonic() - started
            s.settimeout(2)
            reply = s.recv(4096)
        assert json.loads(reply)["error"] == "request not received in time"
        assert cut < 1.5
    finally:
        run.close()


def _hold_as_nobody(path: Path, count: int) -> subprocess.Popen:
    """A child that drops to nobody, opens ``count`` connections, prints how many were refused as busy, then
    holds them until its stdin closes."""
    code = (f"import os,socket,select,sys; os.setgid({NOBODY}); os.setuid({NOBODY}); held=[]\n"
            f"for _ in range({count}):\n"
            f"    s=socket.socket(socket.AF_UNIX); s.connect({str(path)!r}); held.append(s)\n"
            "busy=sum(1 for s in held if select.select([s],[],[],0.3)[0] and b'busy' in s.recv(200))\n"
            "print(busy, flush=True); sys.stdin.read()\n")
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


@root_only
def test_idle_connections_of_one_user_cannot_lock_out_slurmctld(open_dir):
    run = Running(open_dir / "hs.sock", allowed={0, NOBODY}, socket_mode=0o666, priority_uid=0,
                  max_connections=64, max_connections_per_user=8)
    holder = _hold_as_nobody(open_dir / "hs.sock", 64)
    try:
        busy = int(holder.stdout.readline())
        assert busy == 64 - 8  # the user's own cap
        assert ask(open_dir / "hs.sock", REQ)[0]["ok"] is True  # slurmctld's uid (root here) still answered
    finally:
        holder.stdin.close()
        holder.wait(10)
        run.close()


def test_slurmctld_uid_is_never_refused_its_oldest_connection_goes(tmp_path):
    run = Running(tmp_path / "run" / "hs.sock", priority_uid=os.getuid(), max_connections=3)
    held = []
    try:
        for _ in range(4):
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(run.server.socket_path))
            held.append(s)
        held[0].settimeout(2)
        assert b"newer connection" in held[0].recv(200)
        held[-1].sendall(REQ)
        held[-1].settimeout(2)
        assert json.loads(held[-1].makefile("rb").readline())["ok"] is True
        assert run.server.stats["busy"] == 0 and run.server.stats["evicted"] == 1
    finally:
        for s in held:
            s.close()
        run.close()


def test_huge_integer_gets_an_error_reply(tmp_path):
    run = Running(tmp_path / "run" / "hs.sock")
    try:
        big = b'{"v": 1, "op": "submit", "job": {"min_cpus": ' + b"9" * 5000 + b"}}\n"
        reply = ask(run.server.socket_path, big + REQ)
        assert reply[0]["ok"] is False and "too many digits" in reply[0]["error"]
        assert reply[1]["ok"] is True  # and the connection still serves
    finally:
        run.close()


def test_job_names_cannot_forge_log_lines(tmp_path, caplog):
    run = Running(tmp_path / "run" / "hs.sock")
    name = "x\n2026-01-01 00:00:00 ERROR forged line\r"
    line = json.dumps({"v": 1, "op": "submit", "job": {"name": name, "comment": "class=nope\nforged"}}).encode()
    try:
        with caplog.at_level(logging.DEBUG, logger="slurm_plugin.daemon.server"):
            assert ask(run.server.socket_path, line + b"\n")[0]["ok"] is True
    finally:
        run.close()
    messages = [r.getMessage() for r in caplog.records if "forged" in r.getMessage()]
    assert messages and all("\n" not in m and "\r" not in m for m in messages)
    assert any("x\\n2026-01-01" in m for m in messages)


@root_only
def test_refused_connections_are_logged_at_a_bounded_rate(open_dir, caplog):
    run = Running(open_dir / "hs.sock", socket_mode=0o666)
    code = (f"import os,socket; os.setgid({NOBODY}); os.setuid({NOBODY})\n"
            "for _ in range(50):\n"
            f"    s=socket.socket(socket.AF_UNIX); s.connect({str(open_dir / 'hs.sock')!r}); s.recv(200); s.close()\n")
    try:
        with caplog.at_level(logging.WARNING, logger="slurm_plugin.daemon.server"):
            subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
    finally:
        run.close()
    assert run.server.stats["denied"] == 50
    assert len([r for r in caplog.records if "refused a connection" in r.getMessage()]) == 1


@pytest.mark.parametrize("mode, ok", [(0o755, True), (0o700, True), (0o775, False), (0o777, False), (0o1777, False)])
def test_socket_directory_others_can_write_is_refused(tmp_path, mode, ok):
    d = tmp_path / "run"
    d.mkdir()
    d.chmod(mode)
    server = AdmissionServer(d / "hs.sock", load_site("demo"), SnapshotRefresher(Snapshot.empty), {0})
    if ok:
        server._bind().close()
    else:
        with pytest.raises(RuntimeError, match="writable by others"):
            server._bind()


def test_missing_socket_directory_is_created_0755(tmp_path):
    secure_socket_dir(tmp_path / "a" / "run" / "hs.sock")
    assert (tmp_path / "a" / "run").stat().st_mode & 0o777 == 0o755


def test_escape():
    assert escape("plain") == "plain"
    assert escape("a\nb\rc\x1bd\x7f") == "a\\nb\\rc\\x1bd\\x7f"
