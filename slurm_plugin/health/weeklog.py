"""A synthetic week of one node's logs for timing the health check (``hetsched bench health``).

The lines are benign kernel and service lines in the formats the check reads (syslog prefix, varied times, pids,
PCI addresses and counters); ``vendor_share`` of them name a vendor driver that has signatures (amdgpu, mlx5_core,
nvme, i915, NVRM, pcieport AER/DPC, EDAC, mce) so they pass the literal prefilter and reach the driver's regexes,
the pessimistic case. ``faults`` real fault lines (the signatures' own examples) are mixed in so the timing
includes hits. Deterministic for a seed.
"""

from __future__ import annotations

import random
from pathlib import Path

SERVICE = (
    "systemd[1]: Started session-{n}.scope - Session {n} of User alice.",
    "slurmd[2211]: slurmd: launch task StepId={n}.0 request from UID:1000 GID:1000 HOST:10.0.0.1 PORT:{p}",
    "sshd[{p}]: Accepted publickey for alice from 10.0.0.5 port {p} ssh2: ED25519 SHA256:abc",
    "CRON[{p}]: (root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)",
    "systemd-logind[611]: New session {n} of user alice.",
    "slurmstepd[{p}]: done with job {n}",
    "chronyd[702]: Selected source 10.0.0.1 (ntp.example.org)",
    "kernel: python3[{p}]: segfault at 0 ip 00007f3c2a1b2c3d sp 00007ffd1a2b3c40 error 4 in libfoo.so[7f3c2a100000+200000]",
)
VENDOR = (
    "kernel: amdgpu {pci}: amdgpu: SMU is initialized successfully!",
    "kernel: amdgpu {pci}: amdgpu: RAS INFO: ras initialized successfully, hardware ability[7fff] ras_mask[7fff]",
    "kernel: amdgpu {pci}: amdgpu: VRAM: 196592M 0x0000008000000000 - 0x000000AFFEFFFFFF (196592M used)",
    "kernel: mlx5_core {pci}: firmware version: 28.39.1002",
    "kernel: mlx5_core {pci} ens1f0np0: Link up",
    "kernel: mlx5_core {pci}: Port module event: module 0, Cable plugged",
    "kernel: mlx5_core {pci}: E-Switch: Total vports {n}, per vport: max uc(128) max mc(2048)",
    "kernel: nvme nvme{d}: pci function {pci}",
    "kernel: nvme nvme{d}: {n}/0/0 default/read/poll queues",
    "kernel: i915 {pci}: [drm] GT0: GuC firmware i915/tgl_guc_70.bin version 70.5.1",
    "kernel: NVRM: GPU at PCI:{pci}: GPU-b850f46d-d5ea-c752-ddf3-c4453e44d3f7",
    "kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024",
    "kernel: pcieport {pci}: AER: enabled with IRQ {d}",
    "kernel: pcieport {pci}: DPC: enabled with IRQ {d}",
    "kernel: EDAC amd64: Node {d}: DRAM ECC enabled.",
    "kernel: mce: CPU{d}: Thermal monitoring enabled (TM1)",
    "kernel: CPU{d}: Package temperature/speed normal",
)


def week_lines(lines: int = 100_000, vendor_share: float = 0.6, faults: int = 20, seed: int = 0,
               fault_lines: tuple[str, ...] = (), node: str = "node07") -> list[str]:
    """``lines`` log lines spread over 7 days (syslog format), the fault lines spread among them."""
    rng = random.Random(seed)
    t0, span = 1_764_547_200, 7 * 86400  # 2025-12-01 00:00 UTC, one week
    out = []
    for i in range(lines):
        t = t0 + span * i // lines
        if fault_lines and i % max(1, lines // max(faults, 1)) == 0 and i // max(1, lines // faults) < faults:
            body = "kernel: " + rng.choice(fault_lines).split("kernel: ", 1)[-1]
        else:
            pick = VENDOR if rng.random() < vendor_share else SERVICE
            body = rng.choice(pick).format(
                n=rng.randrange(1, 99999), p=rng.randrange(1000, 65535), d=rng.randrange(0, 8),
                pci=f"0000:{rng.randrange(256):02x}:{rng.randrange(32):02x}.{rng.randrange(8)}")
        stamp = _stamp(t)
        out.append(f"{stamp} {node} {body}")
    return out


def _stamp(t: int) -> str:
    import time

    return time.strftime("%b %d %H:%M:%S", time.gmtime(t)).replace(" 0", "  ", 1)


def write_week(path: Path, **kw) -> int:
    """Write :func:`week_lines` to ``path``; returns its size in bytes."""
    text = "\n".join(week_lines(**kw)) + "\n"
    Path(path).write_text(text)
    return len(text.encode())
