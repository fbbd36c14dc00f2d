"""The serving thread's own CPU time slice (daemon/sched_slice.py): set through the real sched_setattr on this
machine's kernel (taken from Linux 6.12 on, ignored and said so before), per thread, and bounded."""

from __future__ import annotations

import logging
import platform
import threading

import pytest
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.daemon.config import DaemonConfig
from slurm_plugin.daemon.sched_slice import set_slice, slice_us


def _kernel_has_slices() -> bool:
    major, minor = (int(x) for x in platform.release().split(".")[:2])
    return (major, minor) >= (6, 12)


def _in_thread(fn):
    """``fn()`` in a thread of its own (a slice is per thread: the test's own thread keeps its scheduling)."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_the_calling_thread_gets_the_slice_where_the_kernel_has_them(caplog):
    before = slice_us()
    with caplog.at_level(logging.INFO):
        took, after, other = _in_thread(lambda: (set_slice(250), slice_us(), _in_thread(slice_us)))
    if _kernel_has_slices():
        assert took and after == 250
        assert other == 250  # threads it starts afterwards inherit it
        assert "serving thread's CPU slice: 250 µs" in caplog.text
    else:
        assert not took and after == 0
        assert "has no per-task slice" in caplog.text
    assert slice_us() == before  # only that thread changed


def test_another_thread_by_its_id():
    ready, done = threading.Event(), threading.Event()
    tid: list[int] = []

    def sleeper():
        tid.append(threading.get_native_id())
        ready.set()
        done.wait(10)

    t = threading.Thread(target=sleeper)
    t.start()
    ready.wait(10)
    try:
        took = set_slice(100, tid[0])
        assert took == _kernel_has_slices()
        assert slice_us(tid[0]) == (100 if took else 0)
    finally:
        done.set()
        t.join()


def test_a_thread_that_does_not_exist_is_logged_not_raised(caplog):
    with caplog.at_level(logging.WARNING):
        assert set_slice(100, 2**22 + 12345) is False
    assert "sched_slice_us 100 not set: sched_setattr failed" in caplog.text


@pytest.mark.parametrize("bad", [99, 100_001, 0])
def test_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match="sched_slice_us must be in 100..100000"):
        set_slice(bad)
    with pytest.raises(ValueError, match="sched_slice_us"):
        DaemonConfig.model_validate({"sched_slice_us": bad})


def test_config_and_cli_take_it():
    assert DaemonConfig.model_validate({}).sched_slice_us is None
    assert DaemonConfig.model_validate({"sched_slice_us": 200}).sched_slice_us == 200
    out = CliRunner().invoke(main, ["daemon", "run", "--sched-slice-us", "50"])
    assert out.exit_code == 2 and "--sched-slice-us" in out.output
