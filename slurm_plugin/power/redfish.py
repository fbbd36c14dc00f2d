"""Redfish power backend: ``ComputerSystem.Reset`` on each node's BMC (DMTF Redfish, HTTP/JSON).

Idempotent: the current ``PowerState`` is read first and a node already on (or off) is left alone; BMCs apply
resets asynchronously, so "done" means the BMC accepted the request, and Slurm's ResumeTimeout covers the boot.
Nodes are asked in parallel (bounded pool, per-call timeout); a BMC that answers garbage (HTTP 200 with
non-JSON, a JSON list) or nothing fails its own node only, with a message naming the node and the URL.
One BMC may serve several systems: its ``Systems`` collection is read once per run and shared.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .base import BmcConfigError, PerNodeBackend, PowerError, bmc_groups, read_credentials

if TYPE_CHECKING:
    from ..site import Site

log = logging.getLogger(__name__)


class RedfishError(PowerError):
    pass


@dataclass(frozen=True)
class BmcTarget:
    base_url: str
    system: str | None
    auth: tuple[str, str] | None
    verify_tls: bool


def targets_from_site(site: Site, hosts: list[str] | None = None) -> dict[str, BmcTarget | BmcConfigError]:
    """Every node (of ``hosts``, default all) whose group has a Redfish BMC, with where to reach it; a node of a
    group whose settings cannot be used maps to the :class:`BmcConfigError` saying why (its call fails alone)."""
    out: dict[str, BmcTarget | BmcConfigError] = {}
    for g, nodes in bmc_groups(site, "redfish", hosts):
        try:
            auth = read_credentials(g.bmc.credentials_file)
        except BmcConfigError as err:
            out.update({n: BmcConfigError(f"node group {g.name}: {err}") for n in nodes})
            continue
        for node in nodes:
            out[node] = BmcTarget(g.bmc.address.format(node=node).rstrip("/"),
                                  g.bmc.system.format(node=node) if g.bmc.system else node, auth, g.bmc.verify_tls)
    return out


class RedfishPower(PerNodeBackend):
    """``timeout``: seconds per HTTP request; ``workers``: BMCs asked at once; ``call_timeout``: the most one
    node's whole call (state read + reset) may take."""

    name = "redfish"
    missing = "no Redfish BMC configured for this node (site: node_groups[].bmc)"

    def __init__(self, targets: dict[str, BmcTarget | BmcConfigError], timeout: float = 10.0, workers: int = 32,
                 call_timeout: float | None = None):
        self.targets, self.timeout, self.workers = targets, timeout, workers
        self.call_timeout = call_timeout or 3 * timeout + 1
        self._lock = threading.Lock()
        self._bmc_locks: dict[str, threading.Lock] = {}
        self._indexes: dict[str, dict[str, str]] = {}  # base URL -> {system id or Name: path}

    def _request(self, t: BmcTarget, path: str, body: dict | None = None, method: str | None = None) -> dict:
        req = urllib.request.Request(t.base_url + path, method=method or ("POST" if body is not None else "GET"),
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        if t.auth:
            token = base64.b64encode(f"{t.auth[0]}:{t.auth[1]}".encode()).decode()
            req.add_header("Authorization", f"Basic {token}")
        ctx = None if t.verify_tls else ssl._create_unverified_context()  # noqa: S323 - opt-in per site
        what = f"{req.method} {req.full_url}"
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=ctx) as resp:
                raw = resp.read(1 << 20)
        except urllib.error.HTTPError as err:
            raise RedfishError(f"{what}: HTTP {err.code} {err.reason}") from None
        except (urllib.error.URLError, OSError) as err:
            raise RedfishError(f"{what}: {getattr(err, 'reason', err)}") from None
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw)
        except ValueError:
            raise RedfishError(f"{what}: the BMC did not answer JSON: {raw[:60]!r}") from None
        if not isinstance(data, dict):
            raise RedfishError(f"{what}: expected a JSON object, got a JSON {type(data).__name__}")
        return data

    def _index(self, t: BmcTarget) -> dict[str, str]:
        """``{system id or Name: path}`` of one BMC's Systems, read once per run (per-BMC lock: a slow BMC
        never delays another's nodes; a BMC serving many systems is read by one thread, names in parallel)."""
        with self._lock:
            lock = self._bmc_locks.setdefault(t.base_url, threading.Lock())
        with lock:
            if t.base_url in self._indexes:
                return self._indexes[t.base_url]
            members = self._request(t, "/redfish/v1/Systems").get("Members", [])
            if not isinstance(members, list) or not all(isinstance(m, dict) and "@odata.id" in m for m in members):
                raise RedfishError(f"{t.base_url}/redfish/v1/Systems: 'Members' is not a list of links")
            paths = [str(m["@odata.id"]) for m in members]
            index = {"": paths[0]} if len(paths) == 1 else {}
            index.update({p.rstrip("/").rsplit("/", 1)[-1]: p for p in paths})
            if len(paths) > 1 and t.system not in index:
                from .pool import run_bounded

                names = run_bounded(paths, lambda p: self._request(t, p).get("Name"), 16, self.timeout + 1)
                index.update({str(out.text): p for p, out in names.items() if out.ok and out.text})
            self._indexes[t.base_url] = index
            return index

    def _system_path(self, t: BmcTarget) -> str:
        index = self._index(t)
        path = index.get("") or index.get(t.system or "")
        if path is None:
            raise RedfishError(f"{t.base_url}: no system named '{t.system}' among {len(set(index.values()))}")
        return path

    def _system(self, t: BmcTarget) -> tuple[str, dict]:
        """(path, resource) of ``t``'s ComputerSystem. Tries ``Systems/<system>`` first (one request when the
        BMC names systems by id or name, as many-system BMCs and emulators do), then the Systems collection."""
        with self._lock:
            known = self._indexes.get(t.base_url)
        if known is None and t.system:
            try:
                doc = self._request(t, f"/redfish/v1/Systems/{urllib.parse.quote(t.system)}")
            except RedfishError:
                doc = {}
            if t.system in (doc.get("Name"), doc.get("Id")) and isinstance(doc.get("@odata.id"), str):
                return doc["@odata.id"], doc
        path = self._system_path(t)
        return path, self._request(t, path)

    def power_state(self, node: str) -> str:
        return self._system(self._target(node))[1].get("PowerState", "Unknown")

    def power(self, host: str, on: bool) -> str:
        t = self._target(host)
        want, reset_type = ("On", "On") if on else ("Off", "GracefulShutdown")
        path, system = self._system(t)
        if system.get("PowerState") == want:
            log.info("%s already %s", host, want)
            return f"already {want.lower()}"
        self._request(t, f"{path}/Actions/ComputerSystem.Reset", {"ResetType": reset_type})
        return f"{reset_type} accepted"
