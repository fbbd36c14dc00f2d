"""Who may have which workload class and QoS tier: only what Slurm validated or the site granted.

See docs/trust.md. Two sources, never anything a user types into a job's free text:

- :class:`Accounting`: what slurmctld itself checks, read from slurm.conf. Without ``AccountingStorageType``
  (other than ``none``) Slurm silently drops an unknown ``--qos`` and accepts any ``--account`` name, so
  neither may raise a job's priority. With ``AccountingStorageEnforce`` naming ``qos`` (or ``all``), slurmctld refuses a
  QOS the user's association may not use, so a tier named by ``--qos`` is granted; with ``associations`` (or
  ``limits``/``qos``/``safe``/``all``, which imply it) the account is checked, so a class named by ``--account`` is.
- :func:`entitlement`: the site file's ``policy.grants``, matched against the job's uid as slurmctld passes it
  (the job owner Slurm authenticated with munge) and that uid's groups from the system's user database; and,
  when the daemon or the cycle reads slurmdbd (:meth:`Accounting.with_associations`), the user's own associations: an account named
  like a class grants the class, the QOS of the job's association (its ``--account`` or the default account)
  grant those tiers. Known associations replace the blanket trust in the enforce flags above: a ``--qos`` or
  ``--account`` the user's association lacks grants nothing even where Slurm would not check it.

uid 0 (root, who may set any priority in Slurm anyway) is entitled to everything; an unknown uid (None) to
the defaults only: the site's ``default_class`` and its tier, and the lowest tier.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site.schema import Policy
    from ..slurm.associations import AssociationCache, AssociationTable, UserAssociations

DEFAULT_SLURM_CONF = "/etc/slurm/slurm.conf"
_ASSOC_WORDS = {"associations", "limits", "qos", "safe", "all"}
_KEY_VALUE = re.compile(r"^\s*([A-Za-z]+)\s*=\s*(\S*)")
IDENTITY_TTL_S = 60.0  # how long a uid's name and groups are cached (group changes apply within this)


@dataclass(frozen=True)
class Accounting:
    """What slurmctld validates: ``qos`` (a job's QOS against its association), ``associations`` (its account);
    ``db``: the users' associations read from slurmdbd, when the daemon reads them."""

    qos: bool = False
    associations: bool = False
    db: AssociationCache | None = field(default=None, compare=False)

    def table(self) -> AssociationTable | None:
        return self.db.table if self.db is not None else None

    @classmethod
    def from_slurm_conf(cls, text: str) -> Accounting:
        """Read ``AccountingStorageType``/``AccountingStorageEnforce`` from slurm.conf text (keys any case;
        the last setting wins, as in Slurm)."""
        keys: dict[str, str] = {}
        for line in text.splitlines():
            m = _KEY_VALUE.match(line.split("#", 1)[0])
            if m:
                keys[m[1].lower()] = m[2]
        storage = keys.get("accountingstoragetype", "accounting_storage/none").lower()
        if storage in ("", "accounting_storage/none", "none"):
            return cls()
        enforce = {w.strip().lower() for w in keys.get("accountingstorageenforce", "").split(",")}
        return cls(qos=bool(enforce & {"qos", "all"}), associations=bool(enforce & _ASSOC_WORDS))

    @classmethod
    def of_file(cls, path: str | Path | None) -> Accounting:
        """:meth:`from_slurm_conf` of ``path`` (None: $SLURM_CONF, else Slurm's default path); nothing is
        trusted when the file cannot be read."""
        path = path or os.environ.get("SLURM_CONF") or DEFAULT_SLURM_CONF
        try:
            return cls.from_slurm_conf(Path(path).read_text(errors="replace"))
        except OSError:
            return cls()

    def with_associations(self, slurm_conf: str | Path | None, cluster: str | None = None) -> Accounting:
        """This, plus slurmdbd's associations (read now, then kept fresh by a background thread) when Slurm
        keeps accounting; unchanged otherwise. The admission daemon and the cycle call it once at start."""
        if not (self.qos or self.associations):
            return self
        from ..slurm import SlurmClient
        from ..slurm.associations import AssociationRefresher

        return replace(self, db=AssociationRefresher(SlurmClient(slurm_conf), cluster).start().cache)

    def describe(self) -> str:
        return (f"accounting enforces qos={'yes' if self.qos else 'no'}, "
                f"associations={'yes' if self.associations else 'no'}")


@dataclass(frozen=True)
class Entitlement:
    """Classes and tiers one uid may have (``everything`` for root); ``why`` names the grants that matched."""

    everything: bool
    classes: frozenset[str]
    tiers: frozenset[str]
    why: str
    associations: UserAssociations | None = None  # slurmdbd's, when known

    def has_class(self, name: str) -> bool:
        return self.everything or name in self.classes

    def has_tier(self, name: str) -> bool:
        return self.everything or name in self.tiers


_identities: dict[int, tuple[float, frozenset, frozenset]] = {}


def identity(uid: int) -> tuple[frozenset, frozenset]:
    """({uid, user name}, {gids and group names}) of ``uid`` from the user database, cached IDENTITY_TTL_S."""
    now = time.monotonic()
    hit = _identities.get(uid)
    if hit and now - hit[0] < IDENTITY_TTL_S:
        return hit[1], hit[2]
    users: set = {uid}
    groups: set = set()
    try:
        pw = pwd.getpwuid(uid)
        users.add(pw.pw_name)
        gids = os.getgrouplist(pw.pw_name, pw.pw_gid)
    except (KeyError, OSError):
        gids = []
    for gid in gids:
        groups.add(gid)
        try:
            groups.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            pass
    if len(_identities) > 4096:
        _identities.clear()
    _identities[uid] = (now, frozenset(users), frozenset(groups))
    return frozenset(users), frozenset(groups)


def entitlement(uid: int | None, policy: Policy, table: AssociationTable | None = None,
                account: str | None = None) -> Entitlement:
    """What ``uid`` may have under ``policy.grants`` (plus the defaults every user has) and, with ``table``, its
    slurmdbd associations (classes: its accounts; tiers: the QOS of ``account``'s association, else the
    default account's)."""
    if uid == 0:
        return Entitlement(True, frozenset(), frozenset(), "root")
    tiers = sorted(policy.qos_tiers, key=lambda t: t.priority)
    class_tier = {c.name: c.qos for c in policy.workload_classes}
    classes = {policy.default_class} if policy.default_class else set()
    granted_tiers = {tiers[0].name} if tiers else set()
    matched = []
    assoc = None
    if uid is not None and (policy.grants or table is not None):
        users, groups = identity(uid)
        for i, g in enumerate(policy.grants):
            if users.intersection(g.users) or groups.intersection(g.groups):
                classes.update(g.classes)
                granted_tiers.update(g.tiers)
                matched.append(f"grants[{i}]")
        assoc = table.of(sorted(n for n in users if isinstance(n, str))) if table is not None else None
    granted_tiers.update(class_tier[c] for c in classes if class_tier.get(c))
    if assoc is not None:  # an association's tiers are its own QOS, not its class's tier
        classes.update(assoc.accounts & set(class_tier))
        granted_tiers.update(assoc.qos(account if account in assoc.accounts else None))
        matched.append("slurmdbd associations")
    why = f"uid {uid}: {', '.join(matched) if matched else 'no grant, defaults only'}"
    return Entitlement(False, frozenset(classes), frozenset(granted_tiers), why, assoc)
