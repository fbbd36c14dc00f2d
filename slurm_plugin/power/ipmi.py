"""IPMI power backend: ``ipmitool -I lanplus chassis power on|soft`` on each node's BMC.

Contract (the same as :mod:`.redfish`): idempotent - the chassis power state is read first and a node already
on (or off) is left alone, so Slurm may ask twice; "done" means the BMC accepted the request (Slurm's
ResumeTimeout covers the boot); every failure names the node and its BMC. Suspend asks for a soft (ACPI)
shutdown, like Redfish's GracefulShutdown; a node that ignores it stays "powering down" until the power state
machine remediates it.

Credentials come from the group's ``bmc.credentials_file`` (``user:password``). The password reaches
ipmitool through its environment (``-E`` reads ``IPMI_PASSWORD``), never through the command line that ``ps``
shows to every user. Each ipmitool call has a hard wall-clock limit besides ipmitool's own per-try timeout.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..site import Site
from .base import BmcConfigError, PowerResult, read_credentials

log = logging.getLogger(__name__)
IPMI_PORT = 623


class IpmiError(RuntimeError):
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


def targets_from_site(site: Site) -> dict[str, IpmiTarget]:
    """Every node whose group has an IPMI BMC, with where to reach it. Raises :class:`BmcConfigError` for a
    group without credentials (ipmitool would stop and prompt for a password) or with a bad address."""
    out = {}
    for g in site.node_groups:
        if not (g.bmc and g.bmc.protocol == "ipmi"):
            continue
        creds = read_credentials(g.bmc.credentials_file)
        if creds is None:
            raise BmcConfigError(f"node group {g.name}: an IPMI bmc needs credentials_file ('user:password')")
        for node in g.hostnames:
            host, port = parse_address(g.bmc.address.format(node=node))
            out[node] = IpmiTarget(host, port, creds[0], creds[1], g.bmc.cipher_suite)
    return out


class IpmiPower:
    """``timeout``: seconds ipmitool waits per try (``-N``); ``retries``: extra tries (``-R``); ``workers``:
    BMCs asked at once (Slurm hands a whole hostlist to one call)."""

    name = "ipmi"

    def __init__(self, targets: dict[str, IpmiTarget], timeout: float = 5.0, retries: int = 1,
                 workers: int = 8, ipmitool: str = "ipmitool"):
        exe = shutil.which(ipmitool)
        if exe is None:
            raise BmcConfigError(f"'{ipmitool}' is not on PATH: install it (apt-get install ipmitool)")
        self.targets, self.timeout, self.retries, self.workers, self.exe = targets, timeout, retries, workers, exe

    def _ipmitool(self, node: str, t: IpmiTarget, *args: str) -> str:
        argv = [self.exe, "-I", "lanplus", "-H", t.host, "-p", str(t.port), "-U", t.user, "-E",
                "-N", str(max(1, round(self.timeout))), "-R", str(self.retries)]
        if t.cipher_suite is not None:
            argv += ["-C", str(t.cipher_suite)]
        argv += list(args)
        what = f"{node}: {t.where}: ipmitool {' '.join(args)}"
        hard = (self.timeout + 1) * (self.retries + 1) + 5
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
        """``on`` or ``off`` as the node's BMC reports it (raises :class:`IpmiError`, KeyError if unknown)."""
        out = self._ipmitool(node, self.targets[node], "chassis", "power", "status")
        words = out.strip().lower().split()
        if not words or words[-1] not in ("on", "off"):
            raise IpmiError(f"{node}: {self.targets[node].where}: unexpected power status {out.strip()!r}")
        return words[-1]

    def _one(self, host: str, want: str, verb: str) -> str | None:
        """Bring ``host`` to ``want``; None when done, else why not."""
        t = self.targets.get(host)
        if t is None:
            return "no IPMI BMC configured for this node (site: node_groups[].bmc with protocol ipmi)"
        try:
            if self.power_state(host) == want:
                log.info("%s already %s", host, want)
            else:
                self._ipmitool(host, t, "chassis", "power", verb)
        except IpmiError as err:
            return str(err)
        return None

    def _set(self, hosts: list[str], want: str, verb: str) -> PowerResult:
        res = PowerResult()
        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(hosts)))) as pool:
            outcomes = list(pool.map(lambda h: self._one(h, want, verb), hosts))
        for host, why in zip(hosts, outcomes):
            if why is None:
                res.done.append(host)
            else:
                res.failed[host] = why
        return res

    def resume(self, hosts: list[str]) -> PowerResult:
        return self._set(hosts, "on", "on")

    def suspend(self, hosts: list[str]) -> PowerResult:
        return self._set(hosts, "off", "soft")
