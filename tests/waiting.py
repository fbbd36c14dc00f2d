"""Polling helpers for tests that wait on real processes (Slurm, the daemon, the cycle, containers)."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def until(pred: Callable[[], T], timeout: float = 90.0, step: float = 1.0) -> T:
    """Call ``pred`` every ``step`` s until it returns something true (returned at once) or ``timeout`` s pass
    (then its value at the deadline, which may be false: the caller asserts with its own message)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if got := pred():
            return got
        time.sleep(step)
    return pred()


def wait_for(what: str | Callable[[], str], pred: Callable[[], T], timeout: float = 60.0, step: float = 0.5) -> T:
    """``until``, but a false value at the deadline fails the test: AssertionError naming ``what`` (a callable
    is called then, for a message that shows the state at the time of the failure)."""
    if got := until(pred, timeout, step):
        return got
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what() if callable(what) else what}")
