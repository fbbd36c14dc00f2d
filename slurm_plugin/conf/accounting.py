"""Slurm accounting (slurmdbd) set up from the site file, idempotently: snapshot -> pure plan -> one applier.

What the site file says becomes Slurm's own rules, so a job's class and tier are enforced by slurmctld
(``AccountingStorageEnforce=associations,limits,qos``) rather than claimed in ``--comment``:

- each QoS tier is a QOS (``Priority`` = the tier's priority, ``Preempt`` = its ``preempts``, ``MaxWall``,
  ``GrpTRES``);
- each workload class is an account whose allowed QOS are its tier and every lower tier, its tier the default;
- each user gets the default class's account (their default) plus the accounts of the classes their
  ``policy.grants`` entries name (by user name; group grants need the host's groups and are not expanded);
  root gets every account.

:func:`plan` compares the wanted :class:`Setup` with what ``sacctmgr`` shows and returns only the commands
that change something (add what is missing, modify what differs); it never removes anything. Applying the
plan twice gives an empty second plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..site import Site
from ..slurm import SlurmClient, SlurmError


@dataclass(frozen=True)
class Qos:
    name: str
    priority: int
    preempt: tuple[str, ...] = ()
    max_wall: str = ""  # Slurm time, "" = no limit
    grp_tres: str = ""  # e.g. "cpu=64,gres/gpu=4", "" = no limit


@dataclass(frozen=True)
class Account:
    name: str
    qos: tuple[str, ...]  # allowed QOS, sorted
    default_qos: str


@dataclass(frozen=True)
class Setup:
    cluster: str
    qos: tuple[Qos, ...]
    accounts: tuple[Account, ...]
    users: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)  # user -> (default, accounts)


@dataclass(frozen=True)
class Current:
    """What sacctmgr shows (see :func:`read_current`)."""

    clusters: frozenset[str]
    qos: dict[str, Qos]
    accounts: dict[str, Account]  # the account's own association on the cluster
    users: dict[str, tuple[str, frozenset[str]]]  # user -> (default account, accounts on the cluster)


def setup_from_site(site: Site, users: list[str] = ()) -> Setup:
    """The accounting wanted for ``site`` with ``users`` (root is always one)."""
    policy = site.policy
    tiers = sorted(policy.qos_tiers, key=lambda t: -t.priority)
    qos = tuple(Qos(t.name, t.priority, tuple(sorted(t.preempts)), t.max_wall or "", t.grp_tres or "") for t in tiers)
    lowest = tiers[-1].name if tiers else "normal"
    accounts = []
    for wc in policy.workload_classes:
        own = wc.qos or lowest
        rank = next((i for i, t in enumerate(tiers) if t.name == own), len(tiers))
        allowed = tuple(sorted({t.name for t in tiers[rank:]} | {own}))
        accounts.append(Account(wc.name, allowed, own))
    names = [a.name for a in accounts]
    default = policy.default_class or (names[-1] if names else "")
    wanted: dict[str, tuple[str, tuple[str, ...]]] = {}
    for user in dict.fromkeys(["root", *users]):
        granted = {c for g in policy.grants if user in map(str, g.users) for c in g.classes}
        mine = set(names) if user == "root" else ({default} | granted) & set(names)
        if mine:
            wanted[user] = (default, tuple(sorted(mine)))
    return Setup(site.slurm.cluster_name, qos, tuple(accounts), wanted)


def _rows(client: SlurmClient, *argv: str) -> list[list[str]]:
    out = client.run("sacctmgr", "-nP", "show", *argv).stdout
    return [line.split("|") for line in out.splitlines() if line.strip()]


def read_current(client: SlurmClient, cluster: str) -> Current:
    """What slurmdbd holds now for ``cluster`` (one ``sacctmgr show`` per kind)."""
    clusters = frozenset(r[0] for r in _rows(client, "cluster", "format=cluster"))
    qos = {r[0]: Qos(r[0], int(r[1] or 0), tuple(sorted(p for p in r[2].split(",") if p)), r[3], r[4])
           for r in _rows(client, "qos", "format=name,priority,preempt,maxwall,grptres")}
    accounts: dict[str, Account] = {}
    users: dict[str, tuple[str, set[str]]] = {}
    defaults = {r[0]: r[1] for r in _rows(client, "user", "format=user,defaultaccount")}
    for acct, user, qlist, defq in _rows(client, "assoc", "where", f"cluster={cluster}",
                                         "format=account,user,qos,defaultqos"):
        if not user:
            accounts[acct] = Account(acct, tuple(sorted(q for q in qlist.split(",") if q)), defq)
        else:
            users.setdefault(user, (defaults.get(user, ""), set()))[1].add(acct)
    return Current(clusters, qos, accounts, {u: (d, frozenset(a)) for u, (d, a) in users.items()})


def plan(want: Setup, have: Current) -> list[list[str]]:
    """The ``sacctmgr -i`` argument lists that turn ``have`` into ``want`` (pure; empty when nothing differs)."""
    c = want.cluster
    cmds: list[list[str]] = []
    if c not in have.clusters:
        cmds.append(["add", "cluster", c])
    for q in want.qos:
        old = have.qos.get(q.name)
        if old is None:
            cmds.append(["add", "qos", q.name])
        sets = []
        if old is None or old.priority != q.priority:
            sets.append(f"priority={q.priority}")
        if old is None and q.preempt or old is not None and old.preempt != q.preempt:
            sets.append(f"preempt={','.join(q.preempt)}" if q.preempt else "preempt=''")
        if (old.max_wall if old else "") != q.max_wall:
            sets.append(f"maxwall={q.max_wall or -1}")
        if (old.grp_tres if old else "") != q.grp_tres:
            gone = [t.split("=")[0] + "=-1" for t in (old.grp_tres if old else "").split(",") if t]
            sets.append(f"grptres={q.grp_tres or ','.join(gone)}")
        if sets:
            cmds.append(["modify", "qos", "where", f"name={q.name}", "set", *sets])
    for a in want.accounts:
        old = have.accounts.get(a.name)
        if old is None:
            cmds.append(["add", "account", a.name, f"cluster={c}", f"description=workload class {a.name}",
                         "organization=hetsched"])
        if old is None or (old.qos, old.default_qos) != (a.qos, a.default_qos):
            cmds.append(["modify", "account", "where", f"name={a.name}", f"cluster={c}", "set",
                         f"qos={','.join(a.qos)}", f"defaultqos={a.default_qos}"])
    for user, (default, accts) in sorted(want.users.items()):
        old_default, old_accts = have.users.get(user, ("", frozenset()))
        missing = [a for a in accts if a not in old_accts]
        if missing:
            cmds.append(["add", "user", user, f"account={','.join(missing)}", f"cluster={c}",
                         *([f"defaultaccount={default}"] if not old_accts else [])])
        if old_accts and old_default != default:
            cmds.append(["modify", "user", "where", f"name={user}", f"cluster={c}", "set", f"defaultaccount={default}"])
    return cmds


def apply(client: SlurmClient, cmds: list[list[str]]) -> None:
    """Run each command with ``sacctmgr -i`` (no confirmation); stops at the first that fails."""
    for cmd in cmds:
        proc = client.run("sacctmgr", "-i", *cmd, check=False)
        if proc.returncode != 0:
            raise SlurmError(["sacctmgr", "-i", *cmd], proc.returncode, proc.stderr or proc.stdout)


def apply_site(client: SlurmClient, site: Site, users: list[str] = (), dry_run: bool = False) -> list[list[str]]:
    """Plan against the live database and apply (unless ``dry_run``); returns the commands."""
    want = setup_from_site(site, users)
    cmds = plan(want, read_current(client, want.cluster))
    if not dry_run:
        apply(client, cmds)
    return cmds


def federation_plan(name: str, clusters: list[str], have: dict[str, set[str]]) -> list[list[str]]:
    """The ``sacctmgr -i`` argument lists that make federation ``name`` hold exactly ``clusters`` (pure;
    ``have``: federation -> its clusters now). A cluster of another federation is refused: Slurm moves it
    silently, which would break that federation."""
    elsewhere = sorted(f"{c} ({f})" for f, cs in have.items() if f != name for c in cs if c in clusters)
    if elsewhere:
        raise ValueError(f"cluster(s) {', '.join(elsewhere)} already in another federation")
    want = ",".join(sorted(clusters))
    if name not in have:
        return [["add", "federation", name, f"clusters={want}"]]
    return [] if have[name] == set(clusters) else [["modify", "federation", "where", f"name={name}", "set",
                                                    f"clusters={want}"]]


def federate(client: SlurmClient, name: str, clusters: list[str], dry_run: bool = False) -> list[list[str]]:
    """Make ``name`` a Slurm federation of ``clusters`` (all registered with this slurmdbd), idempotently;
    returns the commands (run unless ``dry_run``)."""
    have: dict[str, set[str]] = {}
    for row in _rows(client, "federation", "format=federation,cluster"):  # 22.05 adds more columns
        have.setdefault(row[0], set()).update(row[1:2] if len(row) > 1 and row[1] else [])
    cmds = federation_plan(name, clusters, have)
    if not dry_run:
        apply(client, cmds)
    return cmds
