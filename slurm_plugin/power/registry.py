"""Where power backends are registered by name."""

from __future__ import annotations

from collections.abc import Callable

from .base import PowerBackend


def _local(**kw) -> PowerBackend:
    from .local import LocalPower

    if not kw.get("cluster"):
        raise ValueError("the local backend needs --cluster (the local cluster's root directory)")
    return LocalPower(kw["cluster"])


def _redfish(**kw) -> PowerBackend:
    from ..site import load_site
    from .redfish import RedfishPower, targets_from_site

    if not kw.get("site"):
        raise ValueError("the redfish backend needs --site (node groups with a 'bmc' of protocol redfish)")
    return RedfishPower(targets_from_site(load_site(kw["site"])))


def _ipmi(**kw) -> PowerBackend:
    from ..site import load_site
    from .ipmi import IpmiPower, targets_from_site

    if not kw.get("site"):
        raise ValueError("the ipmi backend needs --site (node groups with a 'bmc' of protocol ipmi)")
    return IpmiPower(targets_from_site(load_site(kw["site"])))


BACKENDS: dict[str, Callable[..., PowerBackend]] = {"local": _local, "redfish": _redfish, "ipmi": _ipmi}


def make_backend(name: str, **kwargs) -> PowerBackend:
    if name not in BACKENDS:
        raise ValueError(f"unknown power backend '{name}' (known: {', '.join(sorted(BACKENDS))})")
    return BACKENDS[name](**kwargs)
