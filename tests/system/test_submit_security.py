"""Security of the real daemon serving the real cluster: file modes, peer uid, hostile requests."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys

import pytest

from slurm_plugin.daemon.protocol import MAX_REQUEST_BYTES
from slurm_plugin.daemon.process import ask
from tests.system.test_submit_support import SubmitEnv, submit_env

pytestmark = pytest.mark.system
NOBODY = 65534


env = submit_env()


def as_nobody(path: str) -> str:
    """Connect as uid/gid 65534 and print the reply line, or the error."""
    code = (f"import os,socket; os.setgid({NOBODY}); os.setuid({NOBODY}); s=socket.socket(socket.AF_UNIX)\n"
            "try:\n"
            f"    s.connect({path!r}); print(s.makefile('rb').readline().decode())\n"
            "except OSError as e:\n"
            "    print('ERR', e.errno)\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20).stdout.strip()


def routed_to_gpu(env: SubmitEnv) -> bool:
    sub = env.sbatch("--gres=gpu:1")
    return sub.code == 0 and env.job(sub.job_id)["Partition"] == "gpu"


def test_socket_only_for_its_owner(env):
    st = env.daemon.socket.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0
    assert as_nobody(str(env.daemon.socket)).startswith("ERR 13")  # EACCES: the file mode stops it


def test_peer_uid_checked_even_if_the_mode_is_opened(env):
    os.chmod(env.daemon.socket, 0o666)  # an admin mistake: SO_PEERCRED still refuses other users
    try:
        reply = json.loads(as_nobody(str(env.daemon.socket)))
    finally:
        os.chmod(env.daemon.socket, 0o600)
    assert reply["ok"] is False and f"uid {NOBODY} may not use this socket" in reply["error"]
    assert routed_to_gpu(env)


@pytest.mark.parametrize("raw, error", [
    (b"x" * (MAX_REQUEST_BYTES + 100) + b"\n", "larger than"),
    (b'{"v": 1, "op": "submit", "job": {"script": "rm -rf /", "partition": 5}}\n', "must be a string"),
    (b'{"v": 9, "op": "submit", "job": {}}\n', "unsupported protocol version"),
    (b"\xff\xfe{{{\n", "not JSON"),
])
def test_hostile_requests_get_an_error_and_service_goes_on(env, raw, error):
    reply = ask(env.daemon.socket, raw=raw)
    assert reply["ok"] is False and error in reply["error"]
    assert routed_to_gpu(env)


def test_idle_connections_do_not_block_submissions(env):
    idle = []
    try:
        for _ in range(20):
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(env.daemon.socket))
            s.sendall(b'{"v": 1, "op"')  # never finished
            idle.append(s)
        assert routed_to_gpu(env)
    finally:
        for s in idle:
            s.close()
