"""The daemon over a real Unix socket: answers, errors, security checks, and lifecycle via the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from slurm_plugin.admission.classify import band_site_factor
from slurm_plugin.daemon import AdmissionServer
from slurm_plugin.daemon.protocol import MAX_REQUEST_BYTES
from slurm_plugin.site import load_site
from slurm_plugin.snapshot import Snapshot, SnapshotRefresher
from tests.waiting import wait_for

REQ = json.dumps({"v": 1, "op": "submit", "job": {"gres": "gres:gpu:1", "comment": "class=web", "user_id": 0}}).encode() + b"\n"


def _listening(path: Path) -> bool:
    """Whether a Unix socket bound at ``path`` is listening (``/proc/net/unix``: flag __SO_ACCEPTCON), without
    connecting to it: the socket file exists from bind(), before listen(), and a connect between them is
    refused (seen under load)."""
    try:
        rows = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return path.exists()
    want = str(path)
    return any(len(f) >= 8 and f[7] == want and int(f[3], 16) & 0x10000 for f in (r.split() for r in rows))


class Running:
    """An AdmissionServer on its own event loop thread."""

    def __init__(self, path: Path, allowed: set[int] | None = None, **kw):
        refresher = SnapshotRefresher(Snapshot.empty)
        self.server = AdmissionServer(path, load_site("demo"), refresher, allowed or {os.getuid()}, **kw)
        self.loop = asyncio.new_event_loop()
        self.stop = asyncio.Event()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self.server.serve(self.stop),))
        self.thread.start()
        deadline = time.monotonic() + 30  # a loaded host may take seconds to run the thread's bind + listen
        while not _listening(path) and time.monotonic() < deadline:
            time.sleep(0.02)

    def close(self):
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(5)


@pytest.fixture
def server(tmp_path):
    run = Running(tmp_path / "run" / "hs.sock", read_timeout_s=0.3)
    yield run
    run.close()


def ask(path: Path, data: bytes, timeout: float = 2.0) -> list[dict]:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return [json.loads(x) for x in out.splitlines()]


def test_answers_and_keeps_connection_for_many(server):
    replies = ask(server.server.socket_path, REQ * 3)
    assert len(replies) == 3 and all(r["ok"] and r["action"] == "accept" for r in replies)
    assert replies[0]["set"]["site_factor"] == band_site_factor(510)


def test_socket_not_world_accessible(server):
    mode = stat.S_IMODE(server.server.socket_path.stat().st_mode)
    assert mode == 0o600


def test_malformed_gets_error_and_others_still_served(server):
    path = server.server.socket_path
    assert ask(path, b"garbage\n" + REQ) [0]["ok"] is False
    assert ask(path, REQ)[0]["ok"] is True
    assert server.server.stats["error"] >= 1


def test_oversized_request_refused(server):
    replies = ask(server.server.socket_path, b"x" * (MAX_REQUEST_BYTES + 10))
    assert replies[-1]["ok"] is False and "larger" in replies[-1]["error"]
    assert ask(server.server.socket_path, REQ)[0]["ok"] is True


def test_incomplete_request_times_out(server):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(3)
        s.connect(str(server.server.socket_path))
        s.sendall(b'{"v": 1')
        started = time.monotonic()
        reply = json.loads(s.makefile("rb").readline())
    assert reply["ok"] is False and "in time" in reply["error"] and time.monotonic() - started < 2


def test_other_uid_refused(tmp_path_factory):
    """A client that dropped to nobody is refused by SO_PEERCRED, even where file modes would let it in."""
    if os.getuid() != 0:
        pytest.skip("needs root to switch uid")
    open_dir = Path(tempfile.mkdtemp(prefix="hs-uid-"))
    open_dir.chmod(0o755)
    run = Running(open_dir / "hs.sock", socket_mode=0o666)  # only for the test: the uid check must decide
    server, path = run, open_dir / "hs.sock"
    code = ("import os,socket,json; os.setgid(65534); os.setuid(65534); s=socket.socket(socket.AF_UNIX);"
            f"s.connect({str(path)!r}); print(s.makefile('rb').readline().decode())")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20)
        reply = json.loads(out.stdout or out.stderr)
        assert reply["ok"] is False and "65534" in reply["error"]
        assert server.server.stats["denied"] == 1
        assert ask(path, REQ)[0]["ok"] is True
    finally:
        run.close()
        shutil.rmtree(open_dir, ignore_errors=True)


def test_live_socket_not_stolen(server, tmp_path):
    with pytest.raises(RuntimeError, match="another daemon"):
        AdmissionServer(server.server.socket_path, load_site("demo"), SnapshotRefresher(Snapshot.empty),
                        {0})._bind()


def test_cli_daemon_pidfile_and_clean_sigterm(tmp_path):
    sock, pid_file = tmp_path / "d.sock", tmp_path / "d.pid"
    proc = subprocess.Popen([sys.executable, "-m", "slurm_plugin", "daemon", "run", "--site", "demo", "--socket", str(sock),
                             "--allow-user", str(os.getuid()), "--pid-file", str(pid_file),
                             "--slurm-conf", str(tmp_path / "missing.conf"), "--refresh", "60"],
                            stderr=subprocess.PIPE, text=True)
    try:
        # the socket comes after the imports and the site: 4.5-9.6 s at load 41 (60 s leaves room for CI)
        wait_for(lambda: f"{sock} (daemon exit code {proc.poll()})", lambda: sock.exists() or proc.poll() is not None,
                 timeout=60, step=0.05)
        assert int(pid_file.read_text()) == proc.pid
        assert ask(sock, REQ)[0]["ok"] is True  # no snapshot yet: accepted, never refused
        proc.send_signal(signal.SIGTERM)
        # communicate drains stderr while waiting (a full pipe would block the daemon's log writes); the
        # shutdown joins the snapshot worker, slow on a loaded machine
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert not sock.exists() and not pid_file.exists()
    assert "stopped; served" in err


def test_shipped_config_loads_with_safe_defaults():
    from slurm_plugin.daemon import DaemonConfig

    cfg = DaemonConfig.load(Path(__file__).resolve().parents[3] / "daemon" / "hetsched.yaml")
    assert cfg.socket_mode == 0o600 and cfg.allow_users == ("slurm",) and not cfg.admission.set_qos
    # the daemon takes the queue from the file the shipped cycle unit publishes (snapshot/shared.py)
    unit = (Path(__file__).resolve().parents[3] / "daemon" / "hetsched-cycle.service").read_text()
    assert cfg.queue_file and f"--queue-file {cfg.queue_file}" in unit


def test_snapshot_worker_dies_with_a_killed_daemon(tmp_path):
    """SIGKILL leaves no cleanup to the daemon: its snapshot worker must still go (PR_SET_PDEATHSIG)."""
    sock = tmp_path / "d.sock"
    proc = subprocess.Popen([sys.executable, "-m", "slurm_plugin", "daemon", "run", "--site", "demo", "--socket", str(sock),
                             "--allow-user", str(os.getuid()), "--slurm-conf", str(tmp_path / "missing.conf"),
                             "--refresh", "60"], stderr=subprocess.DEVNULL)
    try:
        children: list[int] = []
        for _ in range(200):
            children = [int(c) for task in Path(f"/proc/{proc.pid}/task").iterdir()
                        for c in (task / "children").read_text().split()]
            if sock.exists() and children:
                break
            time.sleep(0.05)
        assert children, "the daemon started no snapshot worker"
    finally:
        proc.kill()
        proc.wait(10)
    for _ in range(100):
        if not any(Path(f"/proc/{c}").exists() and "Z" not in Path(f"/proc/{c}/stat").read_text().split()[2]
                   for c in children):
            break
        time.sleep(0.05)
    alive = [c for c in children if Path(f"/proc/{c}").exists()
             and Path(f"/proc/{c}/stat").read_text().split()[2] != "Z"]
    assert alive == [], f"worker(s) {alive} outlived the daemon"


def test_cli_ask_prints_the_reply(server):
    from click.testing import CliRunner

    from slurm_plugin.cli.daemon import daemon

    result = CliRunner().invoke(daemon, ["ask", "--socket", str(server.server.socket_path),
                                     '{"comment": "class=web", "user_id": 0}'])
    assert result.exit_code == 0 and json.loads(result.output)["set"]["site_factor"] == band_site_factor(510)
