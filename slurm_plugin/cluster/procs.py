"""Start detached daemons and stop them by pid, never by name; the state file a test cluster records them in."""

from __future__ import annotations

import ctypes
import json
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

from ..fsio import write_atomic

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """Worker initializer (``ProcessPoolExecutor(initializer=die_with_parent, initargs=(os.getpid(),))``): have
    Linux SIGKILL this worker when its parent (pid ``parent``) dies, even by SIGKILL; else an idle or busy
    worker would outlive it. Exits at once if the parent is already gone. The signal is tied to the parent
    *thread* that forked the worker: create the pool's workers from a thread that lives as long as the pool."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError, ctypes.ArgumentError):
        logging.getLogger(__name__).debug("prctl(PR_SET_PDEATHSIG) unavailable: the worker may outlive its parent")
    if os.getppid() != parent:
        os._exit(0)


def spawn_detached(argv: list[str], log: Path, env: dict[str, str] | None = None) -> int:
    """Start ``argv`` in its own session (it outlives this process), output appended to ``log``; return pid
    once ``/proc/PID/cmdline`` shows the new program (or the process has already ended), so that
    ``is_running(pid, expect)`` is true for a live process from the start.

    Popen returns as soon as the child's exec has replaced its memory, but the kernel sets the new command line
    a moment later: a check in between read an empty one, took the just-started admission daemon for dead,
    and the caller's clean-up then stopped it (seen once in a CI rehearsal on a loaded host)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env, close_fds=True)
    deadline = time.monotonic() + 10.0
    while not cmdline(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    return proc.pid


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def is_running(pid: int | None, expect: str = "") -> bool:
    """True if ``pid`` is a live, non-zombie process whose command line contains ``expect``."""
    if not pid:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[1].split()[0] == "Z":
        _reap(pid)
        return False
    return expect in cmdline(pid)


# How reaped children of this process ended (pid -> text), for error messages about processes that died.
_EXITS: dict[int, str] = {}


def _reap(pid: int) -> None:
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return
    if done:
        _EXITS[pid] = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                       else f"exited with code {os.WEXITSTATUS(status)}")


def how_it_ended(pid: int) -> str:
    """How a child of this process that is no longer running ended ("exited with code 1", "killed by signal
    9"), or "" when unknown (not our child, or still running)."""
    _reap(pid)
    return _EXITS.get(pid, "")


def stop_pid(pid: int, expect: str = "", timeout: float = 10.0) -> bool:
    """SIGTERM ``pid`` (only if it still runs ``expect``), SIGKILL after ``timeout``; True if it is gone."""
    if not is_running(pid, expect):
        return True
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not is_running(pid, expect):
            return True
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    time.sleep(0.1)
    _reap(pid)
    return not is_running(pid, expect)


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class RecordedState:
    """A test cluster identified by its ``root`` directory, recording what it started in ``<root>/cluster.json``
    (written atomically) and rendering its configs into ``<root>/etc``."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        self.state_file = self.root / "cluster.json"

    def state(self) -> dict:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}

    def _save_state(self, state: dict) -> None:
        write_atomic(self.root, {"cluster.json": json.dumps(state, indent=2, sort_keys=True) + "\n"})

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"


NODE_UNREADY = ("DOWN", "UNKNOWN", "NOT_RESPONDING", "INVAL")


def _power_saving(state: str) -> bool:
    """Whether a node state (``IDLE+POWERING_DOWN``) is power saving's rather than a failure's."""
    return "POWERED_DOWN" in state or ("POWERING_DOWN" in state and "NOT_RESPONDING" not in state)


def wait_nodes_ready(client, hosts: list[str], deadline: float, unready: tuple[str, ...] = NODE_UNREADY,
                     powered_down_ok: bool = False) -> list[str]:
    """Poll ``client``'s node states every 0.5 s until no host of ``hosts`` shows one of ``unready`` (a node Slurm
    does not list counts as DOWN; with ``powered_down_ok`` a POWERED_DOWN or POWERING_DOWN node is ready: power
    saving put it there, e.g. a steering cycle that started with the cluster) or the monotonic ``deadline``
    passes. Returns the hosts still unready: [] when all are ready."""
    bad = list(hosts)
    while time.monotonic() < deadline:
        states = {n["NodeName"]: n.get("State", "") for n in client.show_nodes()}
        bad = [h for h in hosts if any(s in states.get(h, "DOWN") for s in unready)
               and not (powered_down_ok and _power_saving(states.get(h, "")))]
        if not bad:
            return []
        time.sleep(0.5)
    return bad
