"""Ask the kernel for a short CPU time slice for the daemon's serving thread (EEVDF, Linux 6.12 and later).

Since Linux 6.6 the fair scheduler is EEVDF: a task that wakes on a busy CPU runs once its virtual deadline is
the earliest, and the deadline is its slice ahead (``sched_base_slice``, 0.75 ms x (1 + log2 CPUs), 1.4 ms on the
project's 2-core guest). Nice values change a task's share, not that wait: a daemon woken while slurmctld answers
a large read on every core waits up to a slice. Since 6.12 ``sched_setattr(2)`` sets a fair task's own slice
(``sched_runtime``, 0.1-100 ms): a short slice gives an early deadline, and a task with a shorter slice than the
running one preempts it at wake-up. It is per thread and costs nothing while the thread sleeps; a request that
runs longer than its slice just gets a new deadline. Older kernels accept the call and ignore it, which
:func:`slice_us` (``sched_getattr``) shows, so the daemon says whether it took.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import platform

log = logging.getLogger(__name__)
MIN_US, MAX_US = 100, 100_000  # what the kernel accepts for a fair task's slice
_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275), "riscv64": (274, 275), "ppc64le": (355, 356)}


class _SchedAttr(ctypes.Structure):
    """``struct sched_attr`` (include/uapi/linux/sched/types.h), version 1 (with the utilization clamps)."""

    _fields_ = [("size", ctypes.c_uint32), ("sched_policy", ctypes.c_uint32), ("sched_flags", ctypes.c_uint64),
                ("sched_nice", ctypes.c_int32), ("sched_priority", ctypes.c_uint32),
                ("sched_runtime", ctypes.c_uint64), ("sched_deadline", ctypes.c_uint64),
                ("sched_period", ctypes.c_uint64), ("sched_util_min", ctypes.c_uint32),
                ("sched_util_max", ctypes.c_uint32)]


def _syscall(which: int, tid: int, attr: _SchedAttr) -> None:
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        raise OSError(errno.ENOSYS, f"sched_setattr: no syscall number known for {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    args = (numbers[which], tid, ctypes.byref(attr), 0) if which == 0 else \
        (numbers[which], tid, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if libc.syscall(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def slice_us(tid: int = 0) -> int:
    """The thread's slice in µs as the kernel reports it (``tid`` 0: the calling thread): its own, or the default
    one; 0 on kernels without per-task slices (before 6.12). Raises OSError when the kernel refuses the call."""
    attr = _SchedAttr()
    _syscall(1, tid, attr)
    return attr.sched_runtime // 1000 if attr.sched_policy == 0 else 0


def set_slice(us: int, tid: int = 0) -> bool:
    """Give thread ``tid`` (0: the calling one) a fair-scheduling slice of ``us`` µs, keeping its policy
    SCHED_OTHER and its nice value. True when the kernel took it, False when it ignores per-task slices (Linux
    before 6.12) or refuses the call (logged: a latency setting, never a reason not to serve)."""
    if not MIN_US <= us <= MAX_US:
        raise ValueError(f"sched_slice_us must be in {MIN_US}..{MAX_US} (got {us})")
    try:
        attr = _SchedAttr(size=ctypes.sizeof(_SchedAttr), sched_policy=0,
                          sched_nice=os.getpriority(os.PRIO_PROCESS, tid), sched_runtime=us * 1000)
        _syscall(0, tid, attr)
        took = slice_us(tid) == us
    except OSError as err:
        log.warning("sched_slice_us %d not set: sched_setattr failed (%s)", us, err.strerror or err)
        return False
    if took:
        log.info("serving thread's CPU slice: %d µs (sched_setattr)", us)
    else:
        log.warning("sched_slice_us %d not set: this kernel (%s) has no per-task slice (Linux 6.12 or later)", us,
                    platform.release())
    return took
