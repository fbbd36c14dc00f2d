"""The container cluster's files, computed from a site (pure: site in, text out; nothing is written here).

One Compose-spec file (works with ``docker compose`` and ``podman-compose``) with a service per role: ``db``
(MariaDB), ``dbd`` (slurmdbd), ``ctl`` (slurmctld), ``hetsched`` (the suite: admission daemon and cycle;
optional) and one per site node (slurmd; hostname = NodeName, its fake accelerator devices made at start).
Every container runs its release's one image (:mod:`.images`: every role's packages; ``db`` runs the
bookworm image's MariaDB for every release) with the same entry script, mounted with the rendered configs from
the cluster's ``etc/``; the role is an environment variable. For ``docker compose`` each service also carries a
``build:`` of ``containers/Containerfile`` from Debian's official image with the same packages.
All of them sit on a private bridge network at fixed addresses (``.2`` db, ``.3`` dbd, ``.4`` ctl, ``.5``
hetsched, ``.10`` on the nodes), which the host reaches directly: slurm.conf names addresses, so no DNS is
needed. slurmctld's job_submit.lua asks the daemon through a socket in ``<root>/run`` (``/run/hetsched`` in
both containers).

Federation: a second cluster can be a *member* of a first one's accounting (``plan(member_of=...)``): it has no
``db``/``dbd`` of its own, joins the first cluster's network (addresses after the first one's) and its slurmctld
registers with the first one's slurmdbd, so ``sacctmgr add federation`` can join both clusters.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

import hostlist
import yaml

from ..conf.render import ContainerLayout, _gres_lines
from ..site import Site
from .images import DB_RELEASE, IMAGE, RELEASES, packages

SUITE = "hetsched"  # the suite's service
METRICS_PORT = 9817  # the daemon's Prometheus endpoint, on the suite's address
FIRST_NODE = 10  # host part of the first node's address
MAX_NODES = 250 - FIRST_NODE
ROLES = ("db", "dbd", "ctl", SUITE)
HOST_NAME = "hetsched-host"  # the host (the network's gateway) in the containers' /etc/hosts


class ComposeError(RuntimeError):
    """The site cannot be laid out as a container cluster (too many nodes, no free subnet)."""


@dataclass(frozen=True)
class Plan:
    """Names and addresses of one container cluster: ``prefix`` is unique per root directory and starts every
    container's and the network's name, so nothing of another cluster is ever touched."""

    root: Path
    prefix: str
    release: str
    subnet: str
    addrs: dict[str, str]  # service (db, dbd, ctl, NodeName) -> IPv4 address
    shared_net: str = ""  # a member of another cluster's accounting: that cluster's network (its db/dbd in addrs)

    @property
    def image(self) -> str:
        return IMAGE.format(release=self.release)

    @property
    def suite(self) -> bool:
        """Whether the suite's container (daemon, cycle; job_submit.lua in slurmctld) is part of the cluster."""
        return SUITE in self.addrs

    @property
    def images(self) -> list[str]:
        """The releases whose image this cluster runs (:mod:`.images`: one image per release, every role in
        it): its own, and the DB release's for its MariaDB when that differs."""
        return list(dict.fromkeys([self.release, *([DB_RELEASE] if self.own_db else [])]))

    def data(self, what: str) -> str:
        """Where (under root) the accounting database (``db``) or slurmctld's state (``ctld``) of this release
        lives: one per release, as slurmdbd 24.11 refuses 22.05's schema ("too old to upgrade")."""
        return f"data/{self.release}/{what}"

    @property
    def network(self) -> str:
        return self.shared_net or f"{self.prefix}-net"

    @property
    def own_db(self) -> bool:
        """Whether this cluster runs its own MariaDB and slurmdbd (not a member of another's accounting)."""
        return not self.shared_net

    def container(self, service: str) -> str:
        return f"{self.prefix}-{service}"

    @property
    def services(self) -> list[str]:
        """The containers this cluster runs (a member's ``db``/``dbd`` are the other cluster's)."""
        return [s for s in self.addrs if self.own_db or s not in ("db", "dbd")]

    @property
    def nodes(self) -> list[str]:
        return [s for s in self.addrs if s not in ROLES]


def prefix_for(root: Path) -> str:
    """``hs-`` and 8 hex digits of the root directory's path: the same root always gives the same names."""
    return "hs-" + hashlib.sha1(str(root).encode()).hexdigest()[:8]


def pick_subnet(prefix: str, taken: list[str]) -> str:
    """A /24 in 10.64.0.0/10 chosen from ``prefix`` (stable across runs), moving on past subnets in ``taken``."""
    start = int(prefix[3:], 16) % 16384
    used = [ipaddress.ip_network(t, strict=False) for t in taken]
    for i in range(16384):
        k = (start + i) % 16384
        net = ipaddress.ip_network(f"10.{64 + k // 256}.{k % 256}.0/24")
        if not any(net.overlaps(u) for u in used):
            return str(net)
    raise ComposeError("no free /24 left in 10.64.0.0/10 for the cluster's network")


def plan(site: Site, root: Path, release: str, taken_subnets: list[str], subnet: str | None = None,
         suite: bool = True, member_of: Plan | None = None) -> Plan:
    """Lay the site out: ``subnet`` (a running cluster's) or a free one, and an address per service (the
    suite's only with ``suite``). With ``member_of`` (a running cluster's plan): that cluster's network,
    MariaDB and slurmdbd, and addresses after all of its own."""
    if release not in RELEASES:
        raise ComposeError(f"unknown release '{release}' (known: {', '.join(RELEASES)})")
    if member_of is not None and member_of.release != release:
        raise ComposeError(f"a member cluster must run the release of {member_of.root} ({member_of.release})")
    hosts = [h for g in site.node_groups for h in g.hostnames]
    clash = set(hosts) & set(ROLES)
    if clash:
        raise ComposeError(f"node names {sorted(clash)} clash with the cluster's own containers {ROLES}")
    prefix = prefix_for(root)
    if member_of is None:
        subnet = subnet or pick_subnet(prefix, taken_subnets)
        base = ipaddress.ip_network(subnet).network_address
        addrs = {role: str(base + 2 + i) for i, role in enumerate(ROLES) if suite or role != SUITE}
        first = base + FIRST_NODE
    else:
        subnet = member_of.subnet
        addrs = {"db": member_of.addrs["db"], "dbd": member_of.addrs["dbd"]}
        nxt = max(ipaddress.ip_address(a) for a in member_of.addrs.values()) + 1
        addrs.update({role: str(nxt + i) for i, role in enumerate(("ctl", SUITE)) if suite or role != SUITE})
        first = nxt + 2
    last = ipaddress.ip_network(subnet).network_address + FIRST_NODE + MAX_NODES - 1
    if hosts and first + len(hosts) - 1 > last:
        room = max(0, int(last) - int(first) + 1)
        raise ComposeError(f"site '{site.name}' has {len(hosts)} nodes; its network {subnet} has room for {room}")
    addrs.update({h: str(first + i) for i, h in enumerate(hosts)})
    return Plan(root, prefix, release, subnet, addrs, member_of.network if member_of else "")


def layout(p: Plan) -> ContainerLayout:
    return ContainerLayout(controller_addr=p.addrs["ctl"], accounting_addr=p.addrs["dbd"],
                           node_addrs={h: p.addrs[h] for h in p.nodes}, job_submit=p.suite)


def node_devices(site: Site, lay: ContainerLayout) -> dict[str, list[str]]:
    """NodeName -> the device files its gres.conf lines name (made as fake devices when its container starts)."""
    out: dict[str, list[str]] = {}
    for g in site.node_groups:
        paths = [f"{Path(line.files).parent}/{name}" for line in _gres_lines(g, lay)
                 for name in hostlist.expand_hostlist(Path(line.files).name)]
        out.update({h: paths for h in g.hostnames})
    return out


def slurmdbd_conf(p: Plan, password: str) -> str:
    return "\n".join([
        "# slurmdbd.conf of the hetsched container cluster (generated; mode 600: it holds the database password)",
        "AuthType=auth/munge",
        "DbdHost=dbd",
        f"DbdAddr={p.addrs['dbd']}",
        "DbdPort=6819",
        "SlurmUser=root",
        "StorageType=accounting_storage/mysql",
        f"StorageHost={p.addrs['db']}",
        "StoragePort=3306",
        "StorageUser=slurm",
        f"StoragePass={password}",
        "StorageLoc=slurm_acct_db",
        "LogFile=/var/log/slurm/slurmdbd.log",
        "PidFile=/run/slurmdbd.pid",
        "DebugLevel=info",
        "",
    ])


def new_password() -> str:
    return secrets.token_hex(16)


def compose(site: Site, p: Plan, users: dict[str, int], containers_dir: Path, code: list[str] = (),
            cycle_args: str = "") -> dict:
    """The Compose-spec document (a dict; :func:`compose_text` gives its YAML).

    ``users`` (name -> uid) are created in every container; ``containers_dir`` holds the Containerfile (the
    ``build:`` section, used by ``docker compose`` when the image is missing: Debian's official image and the
    release's packages; ``hetsched`` builds the image with mmdebstrap instead, :mod:`.images`). ``code``: the suite
    container's volume lines that mount this package at /opt/hetsched; ``cycle_args``: extra options of its
    ``hetsched cycle run``."""
    root = p.root
    user_list = " ".join(f"{u}:{uid}" for u, uid in sorted(users.items()))
    devices = node_devices(site, layout(p))
    gateway = str(ipaddress.ip_network(p.subnet).network_address + 1)
    # every address of the cluster (and the host's, the gateway) in every container's /etc/hosts: slurmctld looks
    # up the name of each RPC's sender, and a DNS lookup of a container's address hung 10 s once (Podman's DNS
    # reloading as a node container restarted), holding the job write lock: a CI run's `scontrol show job` timed out
    names = {**p.addrs, HOST_NAME: gateway}

    def service(name: str, env: dict[str, str], volumes: list[str], privileged: bool = False,
                release: str = p.release) -> dict:
        return {
            "image": IMAGE.format(release=release),
            "build": {"context": str(containers_dir), "dockerfile": "Containerfile",
                      "args": {"BASE": f"debian:{release}", "PACKAGES": " ".join(packages(release))}},
            "container_name": p.container(name),
            "hostname": name,
            "privileged": privileged,
            "ulimits": {"nofile": {"soft": 20000, "hard": 20000}, "nproc": {"soft": 4096, "hard": 4096}},
            "environment": {"HETSCHED_USERS": user_list, **env},
            "volumes": [f"{root}/etc:/etc/slurm:ro", *volumes],
            "command": ["/etc/slurm/entry.sh"],
            "networks": {"net": {"ipv4_address": p.addrs[name]}},
            "extra_hosts": [f"{n}:{a}" for n, a in names.items() if n != name],
            "labels": {"io.hetsched.root": str(root)},
            "stop_grace_period": "10s",
        }

    services = {
        "db": service("db", {"HETSCHED_ROLE": "db"}, [f"{root}/{p.data('db')}:/var/lib/mysql"], release=DB_RELEASE),
        "dbd": service("dbd", {"HETSCHED_ROLE": "dbd", "HETSCHED_DB": p.addrs["db"]}, [f"{root}/log/dbd:/var/log/slurm"]),
    } if p.own_db else {}
    services |= {
        "ctl": service("ctl", {"HETSCHED_ROLE": "ctl", "HETSCHED_DBD": p.addrs["dbd"],
                               "HETSCHED_CLUSTER": site.slurm.cluster_name},
                       [f"{root}/log/ctl:/var/log/slurm", f"{root}/{p.data('ctld')}:/var/spool/slurmctld",
                        *([f"{root}/run:/run/hetsched"] if p.suite else [])]),
    }
    if p.suite:
        services[SUITE] = service(SUITE, {"HETSCHED_ROLE": "suite", "HETSCHED_CYCLE_ARGS": cycle_args,
                                          "HETSCHED_CTL": f"{p.addrs['ctl']}:{site.slurm.slurmctld_port}"},
                                  [f"{root}/run:/run/hetsched", f"{root}/log/{SUITE}:/var/log/hetsched",
                                   f"{root}/{p.data('suite')}:/var/lib/hetsched", *code])
    for host in p.nodes:
        services[host] = service(host, {"HETSCHED_ROLE": "node", "HETSCHED_DEVICES": " ".join(devices.get(host, []))},
                                 [f"{root}/log/{host}:/var/log/slurm"], privileged=True)
    net = {"name": p.network, "ipam": {"config": [{"subnet": p.subnet, "gateway": gateway}]}}
    return {"name": p.prefix, "services": services,
            "networks": {"net": net if p.own_db else {"name": p.network, "external": True}}}


def compose_text(doc: dict) -> str:
    head = ("# The hetsched container cluster, generated by `hetsched cluster up --containers` from the site file.\n"
            "# podman-compose -f compose.yaml up -d   or   docker compose -f compose.yaml up -d\n")
    return head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
