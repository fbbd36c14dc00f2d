"""spawn_detached's contract: the pid it returns already shows its new command line, so ``is_running(pid,
expect)`` holds for a live process from the first check (a start check that read the command line in the moment
after exec took a just-started admission daemon for dead)."""

from __future__ import annotations

import sys

from slurm_plugin.cluster.procs import cmdline, is_running, spawn_detached, stop_pid


def test_a_spawned_process_is_running_by_its_command_line_at_once(tmp_path):
    marker = "hetsched-spawn-test"
    pids = []
    try:
        for i in range(100):  # without the wait in spawn_detached about 1 in 200 failed here
            pid = spawn_detached([sys.executable, "-c", "import time; time.sleep(30)", f"{marker}-{i}"],
                                 tmp_path / "spawn.log")
            pids.append(pid)
            assert is_running(pid, f"{marker}-{i}"), (i, cmdline(pid))
    finally:
        for i, pid in enumerate(pids):
            stop_pid(pid, f"{marker}-{i}", timeout=5)
    assert not any(is_running(pid, marker) for pid in pids)


def test_a_process_that_ends_at_once_is_returned_and_not_waited_for(tmp_path):
    pid = spawn_detached(["/bin/false"], tmp_path / "spawn.log")
    assert pid > 0 and not is_running(pid, "/bin/false")
