"""What slurmdbd lets each user use: their accounts on a cluster, the QOS of each of those associations and
their default account (``sacctmgr show assoc`` / ``show user``). Admission grants a workload class (an
account named like it) or a QoS tier only when the user's association has it, instead of trusting what a job
names (docs/trust.md).

:func:`parse` is pure (sacctmgr's ``-nP`` text in, table out); :func:`read_associations` asks sacctmgr;
:class:`AssociationRefresher` keeps an :class:`AssociationCache` fresh from a background thread (the
admission daemon and the cycle each run one), so the request path only reads memory.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from .client import SlurmClient, SlurmError

log = logging.getLogger(__name__)
ASSOC_REFRESH_S = 15.0  # a new or removed association applies to admission and the cycle within this

ASSOC_FORMAT = "cluster,user,account,qos"
USER_FORMAT = "user,defaultaccount"


@dataclass(frozen=True)
class UserAssociations:
    """One user's associations on the cluster: account -> the QOS it may use there, and the default account
    (the one Slurm gives a job that names none)."""

    qos_by_account: dict[str, frozenset[str]]
    default_account: str = ""

    @property
    def accounts(self) -> frozenset[str]:
        return frozenset(self.qos_by_account)

    def qos(self, account: str | None = None) -> frozenset[str]:
        """The QOS allowed with ``account`` (None: the default account's)."""
        return self.qos_by_account.get(account or self.default_account, frozenset())


@dataclass(frozen=True)
class AssociationTable:
    """Every user's associations on one cluster, as read at ``read_at`` (``time.time()``)."""

    users: dict[str, UserAssociations] = field(default_factory=dict)
    read_at: float = 0.0

    def of(self, names) -> UserAssociations | None:
        """The associations of the first of ``names`` (a uid's user names) slurmdbd knows; None: none."""
        return next((self.users[n] for n in names if isinstance(n, str) and n in self.users), None)


def parse(assoc_text: str, user_text: str, cluster: str | None = None, read_at: float = 0.0) -> AssociationTable:
    """The table from ``sacctmgr -nP show assoc format=cluster,user,account,qos`` and ``sacctmgr -nP show user
    format=user,defaultaccount`` output (rows of another cluster than ``cluster`` and account-only rows are
    skipped). An association with no QOS of its own lists none here (Slurm then uses the cluster's)."""
    defaults = {}
    for line in user_text.splitlines():
        parts = line.split("|")
        if len(parts) >= 2 and parts[0]:
            defaults[parts[0]] = parts[1]
    qos: dict[str, dict[str, frozenset[str]]] = {}
    for line in assoc_text.splitlines():
        parts = line.split("|")
        if len(parts) < 4 or not parts[1] or (cluster and parts[0] != cluster):
            continue
        qos.setdefault(parts[1], {})[parts[2]] = frozenset(q for q in parts[3].split(",") if q)
    return AssociationTable({u: UserAssociations(a, defaults.get(u, "")) for u, a in qos.items()}, read_at)


def read_associations(client: SlurmClient, cluster: str | None = None) -> AssociationTable:
    """Ask slurmdbd (two ``sacctmgr show`` calls); raises :class:`~.client.SlurmError` when it cannot."""
    where = ["where", f"cluster={cluster}"] if cluster else []
    assoc = client.run("sacctmgr", "-nP", "show", "assoc", *where, f"format={ASSOC_FORMAT}").stdout
    users = client.run("sacctmgr", "-nP", "show", "user", f"format={USER_FORMAT}").stdout
    return parse(assoc, users, cluster, time.time())


class AssociationCache:
    """The latest :class:`AssociationTable` (None until first read); its refresher replaces it whole, so a
    reader sees one table or the next, never a mix."""

    def __init__(self, table: AssociationTable | None = None):
        self.table = table


class AssociationRefresher:
    """Re-reads the associations every ``interval`` seconds into :attr:`cache`; a failed read keeps the previous
    table and is logged once per failure streak. :meth:`start` reads once before it returns."""

    def __init__(self, client: SlurmClient, cluster: str | None = None, interval: float = ASSOC_REFRESH_S):
        self.client, self.cluster, self.interval = client, cluster, interval
        self.cache = AssociationCache()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="associations", daemon=True)
        self._failing = False

    def refresh(self) -> bool:
        """Read once; True if the cache now holds this read's table."""
        try:
            self.cache.table = read_associations(self.client, self.cluster)
        except (SlurmError, OSError) as err:
            if not self._failing:
                log.warning("slurmdbd associations not read (%s): keeping the previous table (%s)",
                            str(err).splitlines()[0][:200], "none" if self.cache.table is None else "stale")
            self._failing = True
            return False
        if self._failing:
            log.info("slurmdbd associations read again (%d users)", len(self.cache.table.users))
        self._failing = False
        return True

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.refresh()

    def start(self) -> AssociationRefresher:
        self.refresh()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
