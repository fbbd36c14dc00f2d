"""What the health check needs of the site file, kept as plain JSON so a check does not load the site.

Per node: its NVIDIA GPU type (the Xid catalog column its Xids are read for) and the BMC settings of its node
group (protocol, address, system, credentials file - never the credentials -, TLS, cipher suite). Loading a
site (pydantic) costs about 0.5 CPU s, a quarter of the check's budget, so the facts are read from JSON:

- ``hetsched conf render`` / ``cluster up`` write every node's facts (:func:`write_facts`) beside the
  HealthCheckProgram, which passes them as ``--site-facts``;
- else (or when that file is stale) the check loads the site once and keeps the node's facts in
  ``<state-dir>/<node>.site.json``.

Both are keyed on the site file's (absolute path, mtime, size): a changed site is read again. JSON only: this
module imports neither pydantic nor the site model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..fsio import write_file_atomic

if TYPE_CHECKING:
    from ..site import Site

SITE_FACTS = "site-facts.json"  # its name beside the rendered HealthCheckProgram
BMC_FIELDS = ("protocol", "address", "system", "credentials_file", "verify_tls", "cipher_suite")


@dataclass(frozen=True)
class BmcSettings:
    """A node group's ``bmc`` (site schema ``Bmc``), as the power backends read it."""

    protocol: str
    address: str
    system: str | None = None
    credentials_file: str | None = None
    verify_tls: bool = True
    cipher_suite: int | None = None


@dataclass(frozen=True)
class BmcGroup:
    """One node group as :func:`~slurm_plugin.power.base.bmc_groups` reads it: name, hostnames, bmc."""

    name: str
    hostnames: tuple[str, ...]
    bmc: BmcSettings


@dataclass(frozen=True)
class BmcSite:
    """The part of a site the BMC readers (``ipmi/redfish.targets_from_site``) use, for one node."""

    node_groups: tuple[BmcGroup, ...]


@dataclass(frozen=True)
class NodeSite:
    """What the check needs of the site for one node: its NVIDIA GPU type, and its BMC (None: none)."""

    gpu: str | None = None
    bmc: BmcSite | None = None


def site_key(site_path: str | Path) -> list:
    """(absolute path, mtime ns, size) of the site file: facts made from another version do not count."""
    st = os.stat(site_path)
    return [os.path.abspath(site_path), st.st_mtime_ns, st.st_size]


def facts_of(site: Site, nodes: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """node -> {"gpu": NVIDIA GPU type or None, "bmc": {"group", BMC_FIELDS...} or None} for ``nodes``
    (default: every node of the site; a node the site does not have gets nulls)."""
    wanted = set(nodes) if nodes is not None else None
    out: dict[str, dict[str, Any]] = {}
    for g in site.node_groups:
        gpu = g.gpu.type if g.gpu is not None and g.gpu.vendor == "nvidia" else None
        bmc = {"group": g.name, **{k: getattr(g.bmc, k) for k in BMC_FIELDS}} if g.bmc is not None else None
        for h in g.hostnames:
            if wanted is None or h in wanted:
                out[h] = {"gpu": gpu, "bmc": bmc}
    for h in wanted or ():
        out.setdefault(h, {"gpu": None, "bmc": None})
    return out


def facts_text(site: Site, site_path: str | Path) -> str:
    """The facts file of every node of ``site`` (loaded from ``site_path``) for ``--site-facts``."""
    return json.dumps({"key": site_key(site_path), "nodes": facts_of(site)}, sort_keys=True)


def _node(raw: Mapping[str, Any]) -> NodeSite:
    bmc = raw.get("bmc")
    if bmc is None:
        return NodeSite(raw.get("gpu"))
    settings = BmcSettings(**{k: bmc[k] for k in BMC_FIELDS})
    return NodeSite(raw.get("gpu"), BmcSite((BmcGroup(bmc["group"], (raw["node"],), settings),)))


def _read(path: Path, key: list, node: str) -> NodeSite | None:
    """``node``'s facts from a facts file made from this version of the site, else None."""
    try:
        known = json.loads(path.read_text())
        raw = known["nodes"][node] if known["key"] == key else None
        return _node({**raw, "node": node}) if raw is not None else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def node_site(site_path: str, node: str, state_dir: Path, facts_file: str | Path | None = None) -> NodeSite:
    """``node``'s facts for the site file at ``site_path``: from ``facts_file`` (the rendered one) or the
    node's cache in ``state_dir`` when either was made from this version of the site, else from the site
    itself (then cached). Raises :class:`~slurm_plugin.site.SiteError` for a site that does not load and
    OSError for one that cannot be read."""
    key = site_key(site_path)
    cache = state_dir / f"{node}.site.json"
    for path in ([Path(facts_file)] if facts_file else []) + [cache]:
        found = _read(path, key, node)
        if found is not None:
            return found
    from ..site import load_site

    facts = facts_of(load_site(site_path), [node])
    state_dir.mkdir(parents=True, exist_ok=True)
    write_file_atomic(cache, json.dumps({"key": key, "nodes": facts}))
    return _node({**facts[node], "node": node})
