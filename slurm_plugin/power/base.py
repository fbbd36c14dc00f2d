"""The one interface every power backend implements, and what they share (credentials, results)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Protocol

# What the docs tell a site to do with a BMC credentials file: slurmctld runs the power programs as SlurmUser.
CREDENTIALS_ADVICE = "chown root:slurm {path} && chmod 0640 {path}"


class BmcConfigError(ValueError):
    """A node's BMC settings cannot be used (site ``bmc`` section or its credentials file); says which."""


class PowerError(RuntimeError):
    """One node's power call failed; ``str()`` names the node, the BMC and what it said."""


def check_credentials_mode(path: str, st: os.stat_result) -> None:
    """Refuse a credentials file others could read or change (group/world-writable, world-readable).

    Group-readable is fine and expected (``root:slurm 0640``: SlurmUser runs Resume/SuspendProgram).
    """
    mode = stat.S_IMODE(st.st_mode)
    bad = [what for bit, what in ((stat.S_IWOTH, "world-writable"), (stat.S_IWGRP, "group-writable"),
                                  (stat.S_IROTH, "world-readable")) if mode & bit]
    if bad:
        raise BmcConfigError(f"BMC credentials file {path} is {' and '.join(bad)} (mode {mode:04o}): refusing to "
                             f"use it; make it {CREDENTIALS_ADVICE.format(path=path)}")


def read_credentials(path: str | None) -> tuple[str, str] | None:
    """``user:password`` from the first line of ``path`` (a BMC ``credentials_file``); None if no file is set.

    Raises :class:`BmcConfigError` when the file cannot be read, is not ``user:password``, or its mode lets
    others read or change it (see :func:`check_credentials_mode`)."""
    if not path:
        return None
    try:
        with open(path) as fh:
            check_credentials_mode(path, os.fstat(fh.fileno()))
            user, sep, password = fh.readline().rstrip("\n").partition(":")
    except OSError as err:
        raise BmcConfigError(f"BMC credentials file {path}: {err.strerror} (it must be readable by SlurmUser: "
                             f"{CREDENTIALS_ADVICE.format(path=path)})") from None
    if not sep:
        raise BmcConfigError(f"{path}: expected 'user:password' on the first line")
    return user, password


@dataclass
class PowerResult:
    """Per-host outcome: ``done`` hosts reached the asked state (or were already there), ``failed`` maps
    a host to the reason it did not; ``seconds`` is how long each host's call took, ``said`` what a done
    call did (e.g. ``already on``)."""

    done: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    said: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed

    def merge(self, other: PowerResult) -> PowerResult:
        self.done += other.done
        self.failed.update(other.failed)
        self.seconds.update(other.seconds)
        self.said.update(other.said)
        return self


class PowerBackend(Protocol):
    """Powers nodes on and off. Both calls are idempotent: Slurm may ask twice for the same host. A failure
    of one host never stops the others: it is reported in :attr:`PowerResult.failed`."""

    name: str

    def resume(self, hosts: list[str]) -> PowerResult: ...

    def suspend(self, hosts: list[str]) -> PowerResult: ...


def bmc_groups(site, protocol: str, hosts: list[str] | None = None):
    """(node group, its nodes among ``hosts`` - all when None) for each group of ``site`` whose BMC speaks
    ``protocol``; groups with none of the hosts are left out."""
    wanted = set(hosts) if hosts is not None else None
    for g in site.node_groups:
        if g.bmc and g.bmc.protocol == protocol:
            nodes = [n for n in g.hostnames if wanted is None or n in wanted]
            if nodes:
                yield g, nodes


class PerNodeBackend:
    """A backend made of one call per node (:meth:`power`), run for many nodes at once by
    :func:`~slurm_plugin.power.pool.run_bounded`: at most ``workers`` at a time, each cut off after
    ``call_timeout`` seconds, every node's error kept apart."""

    name = "?"
    workers = 16
    call_timeout = 30.0
    targets: dict = {}
    missing = "no BMC configured for this node (site: node_groups[].bmc)"

    def _target(self, node: str):
        """Where ``node``'s BMC is; raises :class:`PowerError` (:attr:`missing`) or the group's config error."""
        t = self.targets.get(node)
        if t is None:
            raise PowerError(self.missing)
        if isinstance(t, BmcConfigError):
            raise t
        return t

    def power(self, host: str, on: bool) -> str:
        """Bring ``host`` on (or off); returns what was done, e.g. ``"already on"``; raises on failure."""
        raise NotImplementedError

    def _run(self, hosts: list[str], on: bool) -> PowerResult:
        from .pool import run_bounded

        res = PowerResult()
        for host, out in run_bounded(hosts, lambda h: self.power(h, on), self.workers, self.call_timeout).items():
            res.seconds[host] = out.seconds
            if out.ok:
                res.done.append(host)
                res.said[host] = out.text
            else:
                res.failed[host] = out.text
        return res

    def resume(self, hosts: list[str]) -> PowerResult:
        return self._run(hosts, True)

    def suspend(self, hosts: list[str]) -> PowerResult:
        return self._run(hosts, False)
