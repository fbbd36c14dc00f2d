"""Independent simulations in parallel processes, with one progress bar over all of them.

Inside :func:`on_slurm` the runs go to the cluster as one Slurm job array instead (:mod:`.slurm_array`).
Workers are forked, so the big shared inputs (a prepared trace, the DQN model) are inherited, not pickled: pass
them as ``shared``; each task is a small tuple. Results come back in task order, whatever order the runs finish
in, so a sweep's output is the serial one's (only wall times differ). The workers die with this process, even
when it is SIGKILLed (:func:`..cluster.procs.die_with_parent`).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed

from ..cluster.procs import die_with_parent

log = logging.getLogger(__name__)
_SHARED = None  # set in the parent before forking; read by the workers
_ARRAY = None  # slurm_array.ArrayOptions inside on_slurm(): run_all submits a job array


@contextlib.contextmanager
def on_slurm(opts) -> Iterator[None]:
    """Within the block, :func:`run_all` runs its tasks as a Slurm job array with ``opts``
    (:class:`.slurm_array.ArrayOptions`; None: locally, as outside)."""
    global _ARRAY
    saved, _ARRAY = _ARRAY, opts
    try:
        yield
    finally:
        _ARRAY = saved


def default_jobs() -> int:
    """Every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _call(fn: Callable, task) -> object:
    return fn(_SHARED, task)


def run_all(fn: Callable, shared, tasks: Sequence, jobs: int | None = None, desc: str = "runs",
            on_result: Callable[[int, object], None] | None = None) -> list:
    """``[fn(shared, task) for task in tasks]``, on up to ``jobs`` processes (None: every core; 1: in this process;
    inside :func:`on_slurm`: one Slurm job array).
    ``fn`` must be a module-level function. ``on_result(i, result)`` is called in this process as each finishes.
    A progress bar over all tasks shows on a terminal."""
    global _SHARED
    from tqdm import tqdm
    jobs = default_jobs() if jobs is None else jobs
    n = len(tasks)
    results: list = [None] * n
    with tqdm(total=n, desc=desc, unit="run", disable=None, leave=False) as bar:
        if _ARRAY is not None:
            from .slurm_array import run_array

            def done(i: int, r) -> None:
                bar.update(1)
                if on_result:
                    on_result(i, r)
            return run_array(fn, shared, tasks, _ARRAY, done)
        if jobs <= 1 or n <= 1:
            for i, task in enumerate(tasks):
                results[i] = fn(shared, task)
                bar.update(1)
                if on_result:
                    on_result(i, results[i])
            return results
        _SHARED = shared
        try:
            ctx = multiprocessing.get_context("fork")
            # the workers die with this process, even when it is SIGKILLed (they would run on otherwise)
            with ProcessPoolExecutor(max_workers=min(jobs, n), mp_context=ctx, initializer=die_with_parent,
                                     initargs=(os.getpid(),)) as pool:
                futures = {pool.submit(_call, fn, task): i for i, task in enumerate(tasks)}
                for fut in as_completed(futures):
                    i = futures[fut]
                    results[i] = fut.result()
                    bar.update(1)
                    if on_result:
                        on_result(i, results[i])
        finally:
            _SHARED = None
    return results
