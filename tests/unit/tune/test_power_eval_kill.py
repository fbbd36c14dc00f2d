"""Killing ``python3 -m slurm_plugin.tune.power_eval`` (the parent, even by SIGKILL) takes its simulation workers
with it (``cluster.procs.die_with_parent``, set by ``sim.parallel.run_all``): a real parent, real workers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from slurm_plugin.cluster.procs import is_running

from .histories import small_swf

REPO = Path(__file__).resolve().parents[3]


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                for c in (task / "children").read_text().split()]
    except OSError:  # the process (or one of its threads) is gone
        return []


def test_killed_power_eval_leaves_no_worker(tmp_path):
    # enough work that the sweep is still running when it is killed: 12 candidates of 5,000 jobs each (~90 CPU s)
    trace = small_swf(tmp_path / "history.swf", 5000, 60.0)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    with open(tmp_path / "log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "slurm_plugin.tune.power_eval", str(trace), "--jobs", "2"],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 300  # importing and preparing the trace is slow on a loaded host
        while time.monotonic() < deadline and proc.poll() is None:
            workers = _children(proc.pid)
            if len(workers) >= 2:
                break
            time.sleep(0.1)
        assert len(workers) >= 2, (f"power_eval started {len(workers)} worker(s) (exit {proc.poll()}): "
                                   + (tmp_path / "log").read_text()[-2000:])
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(60) == -signal.SIGKILL  # it was still running: the workers were busy or waiting
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(is_running(w) for w in workers):
            time.sleep(0.1)
        alive = [w for w in workers if is_running(w)]
        assert alive == [], f"worker(s) {alive} outlived their killed parent {proc.pid}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(60)
        for w in workers:  # only the pids this test saw start, and only if the test failed
            if is_running(w, "slurm_plugin"):
                os.kill(w, signal.SIGKILL)
