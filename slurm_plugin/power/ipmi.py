"""IPMI power backend: ``ipmitool -I lanplus chassis power on|soft`` on each node's BMC.

Contract (the same as :mod:`.redfish`): idempotent - the chassis power state is read first and a node already
on (or off) is left alone, so Slurm may ask twice; "done" means the BMC accepted the request (Slurm's
ResumeTimeout covers the boot); every failure names the node and its BMC. Suspend asks for a soft (ACPI)
shutdown, like Redfish's GracefulShutdown; a node that ignores it stays "powering down" until the power state
machine remediates it. Nodes are asked in parallel (bounded pool; one node's failure is its own).

Credentials come from the group's ``bmc.credentials_file`` (``user:password``). The password reaches
ipmitool through its environment (``-E`` reads ``IPMI_PASSWORD``), never through the command line that ``ps``
shows to every user. Each ipmitool call has a hard wall-clock limit besides ipmitool's own per-try timeout.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .base import BmcConfigError, PerNodeBackend, PowerError, bmc_groups, read_credentials

if TYPE_CHECKING:
    from ..site import Site

log = logging.getLogger(__name__)
IPMI_PORT = 623


class IpmiError(PowerError):
    """One ipmitool call failed; ``str()`` names the node, the BMC and what ipmitool said."""


@dataclass(frozen=True)
class IpmiTarget:
    host: str
    port: int
    user: str
    password: str
    cipher_suite: int | None = None

    @property
    def where(self) -> str:
        return f"BMC {self.host}:{self.port}"


def parse_address(address: str) -> tuple[str, int]:
    """``host``, ``host:port`` or ``[v6addr]:port`` -> (host, port); the IPMI port is 623 unless given.

    >>> parse_address("n1-bmc"), parse_address("127.0.0.1:9001"), parse_address("[::1]:9001")
    (('n1-bmc', 623), ('127.0.0.1', 9001), ('::1', 9001))
    """
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        port = rest.removeprefix(":")
    elif address.count(":") == 1:
        host, _, port = address.partition(":")
    else:
        host, port = address, ""
    if not host or (port and not port.isdigit()) or (port and not 0 < int(port) < 65536):
        raise BmcConfigError(f"IPMI BMC address '{address}' is not host[:port]")
    return host, int(port) if port else IPMI_PORT


def targets_from_site(site: Site, hosts: list[str] | None = None) -> dict[str, IpmiTarget | BmcConfigError]:
    """Every node (of ``hosts``, default all) whose group has an IPMI BMC, with where to reach it. A node of a
    group without credentials (ipmitool would stop and prompt for a password), with an unusable credentials file
    or a bad address maps to the :class:`BmcConfigError` saying why: its call fails alone."""
    out: dict[str, IpmiTarget | BmcConfigError] = {}
    for g, nodes in bmc_groups(site, "ipmi", hosts):
        try:
            creds = read_credentials(g.bmc.credentials_file)
            if creds is None:
                raise BmcConfigError("an IPMI bmc needs credentials_file ('user:password')")
        except BmcConfigError as err:
            out.update({n: BmcConfigError(f"node group {g.name}: {err}") for n in nodes})
            continue
        for node in nodes:
            try:
                host, port = parse_address(g.bmc.address.format(node=node))
            except BmcConfigError as err:
                out[node] = BmcConfigError(f"node group {g.name}: {err}")
                continue
            out[node] = IpmiTarget(host, port, creds[0], creds[1], g.bmc.cipher_suite)
    return out


class IpmiPower(PerNodeBackend):
    """``timeout``: seconds ipmitool waits per try (``-N``); ``retries``: extra tries (``-R``); ``workers``:
    BMCs asked at once (Slurm hands a whole hostlist to one call)."""

    name = "ipmi"
    missing = "no IPMI BMC configured for this node (site: node_groups[].bmc with protocol ipmi)"

    def __init__(self, targets: dict[str, IpmiTarget | BmcConfigError], timeout: float = 5.0, retries: int = 1,
                 workers: int = 16, ipmitool: str = "ipmitool"):
        exe = shutil.which(ipmitool)
        if exe is None:
            raise BmcConfigError(f"'{ipmitool}' is not on PATH: install it (apt-get install ipmitool)")
        self.targets, self.timeout, self.retries, self.workers, self.exe = targets, timeout, retries, workers, exe
        self.call_timeout = 2 * self._hard_limit() + 1  # state read + power command

    def _hard_limit(self) -> float:
        return (self.timeout + 1) * (self.retries + 1) + 5

    def _ipmitool(self, node: str, t: IpmiTarget, *args: str) -> str:
        argv = [self.exe, "-I", "lanplus", "-H", t.host, "-p", str(t.port), "-U", t.user, "-E",
                "-N", str(max(1, round(self.timeout))), "-R", str(self.retries)]
        if t.cipher_suite is not None:
            argv += ["-C", str(t.cipher_suite)]
        argv += list(args)
        what = f"{node}: {t.where}: ipmitool {' '.join(args)}"
        hard = self._hard_limit()
        try:
            proc = subprocess.run(argv, env={**os.environ, "IPMI_PASSWORD": t.password}, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=hard)
        except subprocess.TimeoutExpired:
            raise IpmiError(f"{what}: no answer within {hard:.0f} s") from None
        if proc.returncode:
            said = " / ".join(line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip())
            raise IpmiError(f"{what}: exit {proc.returncode}: {said or 'no output'}")
        return proc.stdout

    def power_state(self, node: str) -> str:
        """``on`` or ``off`` as the node's BMC reports it (raises :class:`IpmiError`)."""
        t = self._target(node)
        out = self._ipmitool(node, t, "chassis", "power", "status")
        words = out.strip().lower().split()
        if not words or words[-1] not in ("on", "off"):
            raise IpmiError(f"{node}: {t.where}: unexpected power status {out.strip()!r}")
        return words[-1]

    def power(self, host: str, on: bool) -> str:
        want, verb = ("on", "on") if on else ("off", "soft")
        t = self._target(host)
        if self.power_state(host) == want:
            log.info("%s already %s", host, want)
            return f"already {want}"
        self._ipmitool(host, t, "chassis", "power", verb)
        return f"chassis power {verb} accepted"
