"""Hold the kernel's CPU wake-up latency limit (PM QoS, ``/dev/cpu_dma_latency``) while the daemon runs.

An idle CPU sleeps in a state it leaves slowly, and on a virtual machine an idle vCPU halts and comes back to
cold caches. At 100 requests a second each request finds the daemon's CPU idle: measured on the project's
2-core KVM guest (haltpoll, guest polling off), one admission answer took 185 µs (p50) at 10 ms between requests,
30-36 µs back to back or 1 ms apart, and 38 µs at 10 ms with the limit held at 0 (the CPU then polls instead of
sleeping; ``results/cycle/admission_idle_gap.py``). The limit is the
kernel's own interface: it holds while the file stays open and lapses when the process exits, so nothing is
left behind. It costs the power (or, on a VM, the host CPU) of idling in a shallow state, so it is off unless
the site asks for it (``cpu_latency_us`` in hetsched.yaml).

``/dev/cpu_dma_latency`` is root's (mode 0600); a daemon running as SlurmUser needs a udev rule giving its group
write access, e.g. ``KERNEL=="cpu_dma_latency", GROUP="slurm", MODE="0660"`` (``daemon/60-hetsched-cpu-latency.rules``).
"""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path

log = logging.getLogger(__name__)
DEVICE = Path("/dev/cpu_dma_latency")
MAX_US = 2_000_000_000  # the device takes a signed 32-bit number of microseconds


class CpuLatencyHold:
    """``with CpuLatencyHold(us):`` asks the kernel to keep every CPU within ``us`` µs of waking while the block
    runs (None: nothing asked). A device that cannot be opened is logged once and the daemon runs without it:
    it is a latency setting, never a reason not to serve."""

    def __init__(self, us: int | None, device: Path = DEVICE):
        if us is not None and not 0 <= us <= MAX_US:
            raise ValueError(f"cpu_latency_us must be in 0..{MAX_US} (got {us})")
        self.us, self.device = us, device
        self.fd: int | None = None

    def __enter__(self) -> CpuLatencyHold:
        if self.us is None:
            return self
        try:
            fd = os.open(self.device, os.O_WRONLY | os.O_CLOEXEC)
        except OSError as err:
            log.warning("cpu_latency_us %d not held: cannot open %s (%s); see daemon/60-hetsched-cpu-latency.rules",
                        self.us, self.device, err.strerror or err)
            return self
        try:
            os.write(fd, struct.pack("=i", self.us))
        except OSError as err:
            os.close(fd)
            log.warning("cpu_latency_us %d not held: writing %s failed (%s)", self.us, self.device, err.strerror or err)
            return self
        self.fd = fd
        log.info("holding the CPU wake-up latency limit at %d µs (%s) while serving", self.us, self.device)
        return self

    @property
    def held(self) -> bool:
        return self.fd is not None

    def __exit__(self, *exc) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)  # the kernel drops this request with the file
