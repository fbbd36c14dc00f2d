"""Run one call per item on a bounded pool of threads, each call cut off after a timeout.

Slurm hands a whole hostlist to one ResumeProgram run; BMCs answer slowly or never. So calls run in
parallel (at most ``workers`` at once), a call that passes ``timeout`` seconds is reported as failed and its
thread abandoned (a daemon thread: it never delays the exit; a fresh worker takes its place, so the pool
keeps its size), and any exception of one call - even an unexpected one - is that item's failure alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class CallOutcome:
    ok: bool
    text: str  # what was done, or why it failed
    seconds: float


def describe(err: BaseException) -> str:
    """An error as one line: the message of the suite's own errors, type and message of anything else."""
    text = str(err).strip() or type(err).__name__
    if type(err).__module__.startswith("slurm_plugin"):
        return " / ".join(text.splitlines())
    return f"{type(err).__name__}: {' / '.join(text.splitlines())}"


def run_bounded(items: Iterable[Hashable], call: Callable[[Hashable], str | None], workers: int,
                timeout: float) -> dict:
    """``{item: CallOutcome}`` for every distinct item, in the order given.

    ``call(item)`` returns a short text (what it did) or raises; ``timeout`` counts from the call's start.
    """
    order = list(dict.fromkeys(items))
    pending = list(reversed(order))
    started: dict = {}
    results: dict = {}
    cond = threading.Condition()

    def worker() -> None:
        while True:
            with cond:
                if not pending:
                    return
                item = pending.pop()
                started[item] = t0 = time.monotonic()
            try:
                out = CallOutcome(True, call(item) or "", time.monotonic() - t0)
            except Exception as err:  # noqa: BLE001 - one item's failure, whatever it is, is that item's alone
                out = CallOutcome(False, describe(err), time.monotonic() - t0)
            with cond:
                abandoned = item in results  # timed out: a replacement worker already runs
                if not abandoned:
                    results[item] = out
                cond.notify_all()
            if abandoned:
                return

    def spawn() -> None:
        threading.Thread(target=worker, daemon=True, name="power-call").start()

    for _ in range(max(1, min(workers, len(order)))):
        spawn()
    with cond:
        while len(results) < len(order):
            now = time.monotonic()
            running = [(t0, item) for item, t0 in started.items() if item not in results]
            for t0, item in running:
                if now - t0 >= timeout:
                    results[item] = CallOutcome(False, f"no answer within {timeout:g} s", now - t0)
                    spawn()
            waits = [t0 + timeout - now for t0, item in running if item not in results]
            if len(results) < len(order):
                cond.wait(max(0.01, min(waits)) if waits else 0.5)
    return {item: results[item] for item in order}
