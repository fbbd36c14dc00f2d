"""A pilot: an ordinary Slurm job that keeps one container of a function's image warm on its node and runs
invocations in it, as the gateway sends them over one TCP connection (JSON lines).

The container runs ``/bin/sh`` reading commands on stdin (read-only rootfs from the bundle cache, its own
pid/mount/ipc/uts namespaces); an invocation is the function's command with the arguments shell-quoted, its
output (stdout and stderr) read up to a marker line carrying the exit status. A pilot exits when the gateway
releases it or closes the connection (scale to zero), or when Slurm ends the job; it removes its container.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

from ..cache import BundleCache

MARK = "__hetsched_fn_end__"


class Container:
    """``runc run`` of a read-only copy of the cached bundle's spec with ``/bin/sh`` on a pipe."""

    def __init__(self, entry: Path, runtime: str, state_dir: str, workdir: Path):
        BundleCache(entry.parent).unpack(entry)
        spec = json.loads((entry / "config.json").read_text())
        spec["root"] = {"path": str(entry / "rootfs"), "readonly": True}
        spec["process"].update(args=["/bin/sh"], terminal=False)
        self.bundle = workdir / f"pilot-{uuid.uuid4().hex[:8]}"
        self.bundle.mkdir(parents=True)
        (self.bundle / "config.json").write_text(json.dumps(spec))
        self.id = f"hs-fn-{os.environ.get('SLURM_JOB_ID', os.getpid())}-{self.bundle.name[-8:]}"
        self.rt = [runtime, f"--root={state_dir}"]
        self.proc = subprocess.Popen([*self.rt, "run", "-b", str(self.bundle), self.id], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)

    def call(self, command: str, args: list[str]) -> tuple[str, int]:
        line = f"set -- {' '.join(shlex.quote(a) for a in args)}; {command} 2>&1; echo \"{MARK} $?\"\n"
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        out = []
        while True:
            got = self.proc.stdout.readline()
            if not got:
                raise RuntimeError(f"container {self.id} ended (exit {self.proc.wait()})")
            if got.startswith(MARK):
                return "".join(out), int(got.split()[1])
            out.append(got)

    def close(self) -> None:
        subprocess.run([*self.rt, "kill", "-a", self.id, "KILL"], capture_output=True)
        subprocess.run([*self.rt, "delete", "--force", self.id], capture_output=True)
        self.proc.wait(timeout=10)
        for f in self.bundle.iterdir():
            f.unlink()
        self.bundle.rmdir()


def serve(gateway: str, fn: str, entry: Path, command: str, runtime: str, state_dir: str, workdir: Path) -> int:
    """Connect to ``gateway`` (host:port), say hello, run invocations until released; returns an exit code."""
    container = Container(entry, runtime, state_dir, workdir)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit(143)))
    host, port = gateway.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            stream = sock.makefile("rw", buffering=1)
            stream.write(json.dumps({"hello": fn, "job": os.environ.get("SLURM_JOB_ID", ""),
                                     "node": os.environ.get("SLURMD_NODENAME", socket.gethostname())}) + "\n")
            for line in stream:
                msg = json.loads(line)
                if msg.get("release"):
                    return 0
                try:
                    out, code = container.call(command, [str(a) for a in msg.get("args", [])])
                    reply = {"id": msg["id"], "stdout": out, "exit": code}
                except Exception as err:  # noqa: BLE001 - reported to the caller, the pilot stops
                    stream.write(json.dumps({"id": msg["id"], "error": str(err)}) + "\n")
                    return 1
                stream.write(json.dumps(reply) + "\n")
        return 0
    finally:
        container.close()


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m slurm_plugin.deploy.fn.pilot")
    p.add_argument("--gateway", required=True)
    p.add_argument("--fn", required=True)
    p.add_argument("--bundle", required=True, type=Path)
    p.add_argument("--command", required=True)
    p.add_argument("--runtime", default="runc")
    p.add_argument("--state-dir", required=True)
    p.add_argument("--workdir", required=True, type=Path)
    a = p.parse_args(argv)
    return serve(a.gateway, a.fn, a.bundle, a.command, a.runtime, a.state_dir, a.workdir)


if __name__ == "__main__":
    sys.exit(main())
