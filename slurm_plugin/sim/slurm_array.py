"""Independent simulations as one Slurm job array (``--slurm``): a site with spare nodes sweeps on them.

:func:`run_array` is :func:`.parallel.run_all` on the cluster: ``fn``, the shared input and the tasks are
pickled into a work directory (it must be visible from the nodes: a shared file system, or one machine as in
the local test cluster), one ``sbatch --array=0-(n-1)`` runs ``python -m slurm_plugin.sim.slurm_array DIR`` per
task (``SLURM_ARRAY_TASK_ID`` picks the task; the job inherits this process's environment, so the same Python
and ``PYTHONPATH``), each task writes ``DIR/out/<i>.pkl`` atomically, and the caller polls for them. Results
come back in task order. A task that fails (or an array that leaves the queue with results missing) raises
:class:`ArrayError` naming the task and the tail of its log.
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..fsio import write_file_atomic
from ..slurm.client import SlurmClient


class ArrayError(RuntimeError):
    pass


@dataclass(frozen=True)
class ArrayOptions:
    """Where and how to submit: ``conf`` (slurm.conf; None: $SLURM_CONF), ``workdir`` (parent of the per-sweep
    directory; None: $HETSCHED_ARRAY_DIR or the temp dir), extra ``sbatch`` arguments (partition, time...),
    ``poll_s`` between checks and ``timeout_s`` for the whole array."""

    conf: str | None = None
    workdir: str | None = None
    sbatch_args: tuple[str, ...] = field(default_factory=tuple)
    poll_s: float = 1.0
    timeout_s: float = 24 * 3600.0


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def run_array(fn: Callable, shared, tasks: Sequence, opts: ArrayOptions,
              on_result: Callable[[int, object], None] | None = None) -> list:
    """``[fn(shared, task) for task in tasks]`` as one Slurm job array (``fn`` module-level, picklable)."""
    n = len(tasks)
    if not n:
        return []
    parent = opts.workdir or os.environ.get("HETSCHED_ARRAY_DIR") or None
    wd = Path(tempfile.mkdtemp(prefix="hetsched-array-", dir=parent))
    (wd / "out").mkdir()
    write_file_atomic(wd / "input.pkl", pickle.dumps({"fn": fn, "shared": shared, "tasks": list(tasks)},
                                                     protocol=pickle.HIGHEST_PROTOCOL))
    client = SlurmClient(opts.conf)
    script = f"#!/bin/sh\nexec {sys.executable} -m slurm_plugin.sim.slurm_array {wd}\n"
    job = client.sbatch(f"--array=0-{n - 1}", "--job-name=hetsched-sweep", f"--output={wd}/%a.log",
                        f"--chdir={wd}", *opts.sbatch_args, script=script)
    results: list = [None] * n
    done = [False] * n
    deadline = time.monotonic() + opts.timeout_s
    while not all(done):
        progressed = False
        for i in range(n):
            if done[i]:
                continue
            out = wd / "out" / f"{i}.pkl"
            if out.exists():
                ok, value = pickle.loads(out.read_bytes())
                if not ok:
                    client.run("scancel", str(job), check=False)
                    raise ArrayError(f"array job {job} task {i} failed: {value}\n{_log_tail(wd / f'{i}.log')}")
                results[i], done[i], progressed = value, True, True
                if on_result:
                    on_result(i, value)
        if all(done):
            break
        if not progressed:
            queued = client.run("squeue", "-h", "-j", str(job), check=False).stdout.strip()
            if not queued and not any((wd / "out" / f"{i}.pkl").exists() for i in range(n) if not done[i]):
                i = done.index(False)
                raise ArrayError(f"array job {job} left the queue without task {i}'s result (killed, out of "
                                 f"memory or time?); its log {wd / f'{i}.log'}:\n{_log_tail(wd / f'{i}.log')}")
            if time.monotonic() > deadline:
                client.run("scancel", str(job), check=False)
                raise ArrayError(f"array job {job}: {done.count(False)} of {n} task(s) not done after "
                                 f"{opts.timeout_s:.0f} s (cancelled)")
            time.sleep(opts.poll_s)
    return results


def work(wd: Path, i: int) -> None:
    """One array task: run task ``i`` of ``wd``'s input and write ``(ok, result or error text)``."""
    spec = pickle.loads((wd / "input.pkl").read_bytes())
    try:
        value = (True, spec["fn"](spec["shared"], spec["tasks"][i]))
    except Exception as err:  # the caller raises it with the task's log
        import traceback
        traceback.print_exc()
        value = (False, f"{type(err).__name__}: {err}")
    write_file_atomic(wd / "out" / f"{i}.pkl", pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    work(Path(sys.argv[1]), int(os.environ["SLURM_ARRAY_TASK_ID"]))
