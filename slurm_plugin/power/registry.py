"""Which backend powers which node, and how each backend is built.

A node's backend comes from its node group in the site file: ``bmc.protocol`` (``redfish``, ``ipmi``), or
``local`` (the local test cluster's slurmd processes) for a group without a ``bmc`` when a local cluster root is
given. ``--backend NAME`` forces one backend for every node.
"""

from __future__ import annotations

from collections.abc import Callable

from .base import PowerBackend

BACKEND_NAMES = ("container", "ipmi", "local", "redfish")


def _local(site, cluster, hosts) -> PowerBackend:
    from .local import LocalPower

    if not cluster:
        raise ValueError("the local backend needs --cluster (the local cluster's root directory)")
    return LocalPower(cluster)


def _container(site, cluster, hosts) -> PowerBackend:
    from .container import ContainerPower

    if not cluster:
        raise ValueError("the container backend needs --cluster (the container cluster's root directory)")
    return ContainerPower(cluster)


def _need_site(site, name: str) -> None:
    if site is None:
        raise ValueError(f"the {name} backend needs a site file (--site, HETSCHED_SITE or /etc/hetsched/site.yaml) "
                         f"whose node groups have a 'bmc' of protocol {name}")


def _redfish(site, cluster, hosts) -> PowerBackend:
    from .redfish import RedfishPower, targets_from_site

    _need_site(site, "redfish")
    return RedfishPower(targets_from_site(site, hosts))


def _ipmi(site, cluster, hosts) -> PowerBackend:
    from .ipmi import IpmiPower, targets_from_site

    _need_site(site, "ipmi")
    return IpmiPower(targets_from_site(site, hosts))


BACKENDS: dict[str, Callable[..., PowerBackend]] = {"local": _local, "container": _container, "redfish": _redfish,
                                                    "ipmi": _ipmi}


def make_backend(name: str, site=None, cluster: str | None = None, hosts: list[str] | None = None) -> PowerBackend:
    """Build backend ``name`` for ``hosts`` of ``site`` (a :class:`~slurm_plugin.site.Site` or None); raises
    ValueError (unknown name, missing site/cluster) or :class:`~.base.BmcConfigError`."""
    if name not in BACKENDS:
        raise ValueError(f"unknown power backend '{name}' (known: {', '.join(sorted(BACKENDS))})")
    return BACKENDS[name](site, cluster, hosts)


def route(hosts: list[str], site=None, cluster: str | None = None,
          forced: str | None = None) -> tuple[dict[str, list[str]], dict[str, str]]:
    """``({backend name: hosts}, {host: why it has no backend})`` for ``hosts``, from their node groups in
    ``site`` (see the module docstring) or all to ``forced``."""
    if forced:
        return {forced: list(hosts)}, {}
    groups = {h: g for g in site.node_groups for h in g.hostnames} if site is not None else {}
    plan: dict[str, list[str]] = {}
    missing: dict[str, str] = {}
    for host in hosts:
        group = groups.get(host)
        if group is None:
            if site is None and cluster:
                plan.setdefault("local", []).append(host)
            else:
                missing[host] = (f"not a node of site '{site.name}'" if site is not None else
                                 "no site file (--site, HETSCHED_SITE or /etc/hetsched/site.yaml) to find its BMC")
        elif group.bmc:
            plan.setdefault(group.bmc.protocol, []).append(host)
        elif cluster:
            plan.setdefault("local", []).append(host)
        else:
            missing[host] = (f"node group {group.name} has no bmc (site: node_groups[].bmc) and no local cluster "
                             "root was given (--cluster)")
    return plan, missing
