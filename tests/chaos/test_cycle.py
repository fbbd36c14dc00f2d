"""Chaos for the steering cycle (issue 11 items 4, 5, 6 and the corrupt journal of item 14), on a real cluster.

- Two cycles at once never apply an action twice: the state directory's lock lets one writer run, the other
  exits 3 at once with a message naming the holder.
- ``cycle run`` survives whatever one cycle raises (a state file of the wrong type, ...): it logs, counts,
  backs off and keeps cycling; a bad cycle-state.json is moved aside.
- With slurmctld killed or stopped (SIGSTOP, by pid) in the middle of an apply, the applier stops after the
  first command that meets it and reports the rest as not attempted (before: 9-10 s per remaining command).
- A journal with garbage lines is read around them, with a warning, never a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurm_plugin.decision import Decision, Journal, SetPartitionNodes, SlurmApplier
from slurm_plugin.decision.applier import NOT_ATTEMPTED
from slurm_plugin.slurm import SlurmClient

from ..waiting import wait_for
from .conftest import module_cluster

pytestmark = pytest.mark.system

ccluster = module_cluster("chaos-cycle")
EXIT_LOCKED, EXIT_UNREACHABLE = 3, 4
POWER_ALL = ["--no-pack", "--no-reshape", "--idle-grace", "0", "--warm", "0", "--wait-price", "0"]


def hetsched(cluster, *args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "SLURM_CONF": str(cluster.conf),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-m", "slurm_plugin", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _cycles(state_dir: Path) -> int:
    """Cycles counted in cycle-state.json (0 while it is missing or still the bad file the test wrote)."""
    try:
        cycles = json.loads((state_dir / "cycle-state.json").read_text()).get("cycles")
    except (OSError, ValueError):
        return 0
    return cycles if isinstance(cycles, int) else 0


def _holds_lock(state_dir: Path, proc: subprocess.Popen) -> bool:
    try:
        return (state_dir / "hetsched.lock").read_text().strip() == str(proc.pid)
    except OSError:
        return False


def _let_go(proc: subprocess.Popen, fifo: Path, text: str) -> None:
    """Write ``text`` into ``fifo`` once ``proc`` has it open for reading (never blocks if ``proc`` died)."""
    def reader_there() -> int | None:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            return None if proc.poll() is None else -1
    fd = wait_for("the first cycle to open its site file", reader_there, 60, 0.05)
    if fd >= 0:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)


def test_two_cycles_at_once_apply_each_action_once(ccluster, tmp_path):
    """Two `cycle once`: the first holds the lock and waits, blocked in reading its site file (a FIFO the test
    fills only after the second has exited), so the second certainly runs while the first holds the lock; the
    second exits 3 and the first, let go, applies every action once.

    (Freezing the first by SIGSTOP once its pid was in the lock file raced: the pid stays in the file after the
    lock is released, and on a loaded CI machine the first had already finished its cycle when it was frozen.)"""
    site = Path(ccluster.state()["site_path"])
    held_site = tmp_path / "site.yaml"
    os.mkfifo(held_site)
    with open(tmp_path / "journal.jsonl", "wb") as fh:  # item 14: garbage where the journal is
        fh.write(b"\x00\xffnot json\n[1,2,3]\n")
    first = hetsched(ccluster, "cycle", "once", str(held_site), "--state-dir", str(tmp_path), *POWER_ALL)
    try:
        wait_for("the first cycle's lock", lambda: _holds_lock(tmp_path, first) or first.poll() is not None, 60, 0.1)
        assert first.poll() is None, first.communicate()
        second = hetsched(ccluster, "cycle", "once", str(site), "--state-dir", str(tmp_path), *POWER_ALL)
        out, err = second.communicate(timeout=60)
        assert second.returncode == EXIT_LOCKED, (out, err)
        assert f"locked by process {first.pid}" in err and "exiting without changing anything" in err
    finally:
        _let_go(first, held_site, site.read_text())
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, (out, err)
    assert out.count("POWER_DOWN") >= 5, out  # every idle node group, once
    applied = [(e["kind"], tuple(e.get("nodes", ())), e.get("action")) for e in
               Journal(tmp_path / "journal.jsonl").entries()]
    assert len(applied) >= 5 and len(applied) == len(set(applied)), applied
    why = hetsched(ccluster, "why", "node", "npun1", "--journal", str(tmp_path / "journal.jsonl"))
    out, err = why.communicate(timeout=60)
    assert why.returncode == 0 and "power (IDLE_GRACE): npu: idle" in out and "Traceback" not in err
    assert "skipped 2 unreadable line(s)" in err


def test_cycle_once_exits_3_while_cycle_run_holds_the_lock(ccluster, tmp_path):
    site = ccluster.state()["site_path"]
    loop = hetsched(ccluster, "cycle", "run", site, "--state-dir", str(tmp_path), "--interval", "3600", *POWER_ALL)
    try:
        wait_for("the loop's first cycle", lambda: _cycles(tmp_path) >= 1, 60, 0.1)
        t0 = time.monotonic()
        second = hetsched(ccluster, "cycle", "once", site, "--state-dir", str(tmp_path), *POWER_ALL)
        out, err = second.communicate(timeout=60)
        assert second.returncode == EXIT_LOCKED, (out, err)
        assert f"locked by process {loop.pid}" in err and time.monotonic() - t0 < 30
    finally:
        loop.send_signal(signal.SIGTERM)
        assert loop.wait(30) == 0


def test_the_loop_survives_bad_state_files_and_keeps_cycling(ccluster, tmp_path):
    site = ccluster.state()["site_path"]
    (tmp_path / "scale-memory.json").write_text(json.dumps(
        {"idle_since": {}, "booting_since": {}, "pid": {}, "last_t": "now"}))  # item 5's wrong type
    (tmp_path / "cycle-state.json").write_text('{"cycles": "many"}')
    loop = hetsched(ccluster, "-v", "cycle", "run", site, "--state-dir", str(tmp_path), "--interval", "0.2",
                    "--max-backoff", "0.5", "--no-pack", "--no-reshape")
    try:
        wait_for("three cycles", lambda: _cycles(tmp_path) >= 3, 90, 0.1)
        assert loop.poll() is None, loop.stderr.read()
        assert list(tmp_path.glob("cycle-state.json.bad-*"))  # moved aside, not a crash loop
    finally:
        loop.send_signal(signal.SIGTERM)
        assert loop.wait(30) == 0
    err = loop.stderr.read()
    assert "moved aside" in err
    state = json.loads((tmp_path / "cycle-state.json").read_text())
    assert state["cycles"] >= 3 and ("cycle failed" in err) == (state["failures"] > 0)


class SignalsSlurmctldAfterFirstUpdate(SlurmClient):
    """The real client; after its first successful ``scontrol update`` it sends slurmctld ``sig`` by pid:
    SIGKILL (a crash; it waits until the process is gone) or SIGSTOP (a hung controller) - the fault injected
    mid-apply."""

    def __init__(self, conf: str, pid: int, sig: signal.Signals):
        super().__init__(conf)
        self.pid, self.sig, self.updates = pid, sig, 0

    def run(self, *argv, **kw):
        proc = super().run(*argv, **kw)
        if argv[:2] == ("scontrol", "update"):
            self.updates += 1
            if self.updates == 1:
                os.kill(self.pid, self.sig)
                if self.sig == signal.SIGKILL:
                    wait_for("slurmctld gone", lambda: not Path(f"/proc/{self.pid}").exists() or
                             Path(f"/proc/{self.pid}/stat").read_text().split()[2] == "Z", 10, 0.1)
        return proc


def test_apply_aborts_when_slurmctld_hangs_mid_apply(ccluster, tmp_path):
    pid = ccluster.state()["slurmctld_pid"]
    actions = tuple(SetPartitionNodes("x86", ("x86n1", "x86n2"), f"reshape {i}") for i in range(6))
    client = SignalsSlurmctldAfterFirstUpdate(str(ccluster.conf), pid, signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        results = SlurmApplier(client, Journal(tmp_path / "j.jsonl")).apply(Decision(actions))
    finally:
        os.kill(pid, signal.SIGCONT)
    took = time.monotonic() - t0
    print(f"apply of {len(actions)} actions with slurmctld stopped (SIGSTOP) after the first: {took:.1f} s")
    assert [r.status for r in results] == ["ok", "failed"] + ["not-attempted"] * 4
    assert "Socket timed out" in results[1].error
    assert took < 25, took  # one MessageTimeout (10 s), no ping needed; was 5 x 10 s


def test_apply_aborts_when_slurmctld_dies_mid_apply(ccluster, tmp_path):
    """Runs last in this module: it leaves the cluster without slurmctld (the fixture stops the rest)."""
    pid = ccluster.state()["slurmctld_pid"]
    actions = tuple(SetPartitionNodes("x86", ("x86n1", "x86n2"), f"reshape {i}") for i in range(6))
    client = SignalsSlurmctldAfterFirstUpdate(str(ccluster.conf), pid, signal.SIGKILL)
    applier = SlurmApplier(client, Journal(tmp_path / "j.jsonl"))
    t0 = time.monotonic()
    results = applier.apply(Decision(actions))
    took = time.monotonic() - t0
    print(f"apply of {len(actions)} actions with slurmctld killed after the first: {took:.1f} s")
    assert [r.status for r in results] == ["ok", "failed"] + ["not-attempted"] * 4
    assert "slurmctld unreachable" in results[1].error and results[2].error == NOT_ATTEMPTED
    assert took < 20, took  # one command meets the dead controller (~9 s), then a 10 ms ping; not 5 x 9 s
    assert [e["ok"] for e in Journal(tmp_path / "j.jsonl").entries()] == [True] + [False] * 5
    # and a whole cycle against the dead controller exits 4, in about one Slurm timeout
    t0 = time.monotonic()
    once = hetsched(ccluster, "cycle", "once", ccluster.state()["site_path"], "--state-dir", str(tmp_path))
    out, err = once.communicate(timeout=120)
    assert once.returncode == EXIT_UNREACHABLE, (out, err)
    # 22.05: exit 0, an error and no nodes ("reported no nodes"); 24.11: exit 1, "Unable to contact ..."
    assert "slurmctld unreachable: `sinfo --json` exited 1: " in err, err
    assert time.monotonic() - t0 < 60
    # `why` says so too (exit 4), instead of "Slurm no longer knows it" (it answered from the journal, exit 1)
    why = hetsched(ccluster, "why", "job", "1", "--journal", str(tmp_path / "j.jsonl"))
    out, err = why.communicate(timeout=120)
    assert why.returncode == EXIT_UNREACHABLE and "slurmctld unreachable: `scontrol -o show job 1`" in err, (out, err)
