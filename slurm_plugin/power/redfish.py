"""Redfish power backend: ``ComputerSystem.Reset`` on each node's BMC (DMTF Redfish, HTTP/JSON).

Idempotent: the current ``PowerState`` is read first and a node already on (or off) is left alone; BMCs apply
resets asynchronously, so "done" means the BMC accepted the request, and Slurm's ResumeTimeout covers the boot.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass

from ..site import Site
from .base import PowerResult, read_credentials

log = logging.getLogger(__name__)


class RedfishError(RuntimeError):
    pass


@dataclass(frozen=True)
class BmcTarget:
    base_url: str
    system: str | None
    auth: tuple[str, str] | None
    verify_tls: bool


def targets_from_site(site: Site) -> dict[str, BmcTarget]:
    """Every node whose group has a Redfish BMC, with where to reach it."""
    out = {}
    for g in site.node_groups:
        if g.bmc and g.bmc.protocol == "redfish":
            auth = read_credentials(g.bmc.credentials_file)
            for node in g.hostnames:
                out[node] = BmcTarget(g.bmc.address.format(node=node).rstrip("/"),
                                      g.bmc.system.format(node=node) if g.bmc.system else node, auth,
                                      g.bmc.verify_tls)
    return out


class RedfishPower:
    name = "redfish"

    def __init__(self, targets: dict[str, BmcTarget], timeout: float = 10.0):
        self.targets, self.timeout = targets, timeout

    def _request(self, t: BmcTarget, path: str, body: dict | None = None) -> dict:
        req = urllib.request.Request(t.base_url + path, method="POST" if body is not None else "GET",
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        if t.auth:
            token = base64.b64encode(f"{t.auth[0]}:{t.auth[1]}".encode()).decode()
            req.add_header("Authorization", f"Basic {token}")
        ctx = None if t.verify_tls else ssl._create_unverified_context()  # noqa: S323 - opt-in per site
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=ctx) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            raise RedfishError(f"{req.method} {req.full_url}: HTTP {err.code} {err.reason}") from None
        except (urllib.error.URLError, OSError) as err:
            raise RedfishError(f"{req.method} {req.full_url}: {getattr(err, 'reason', err)}") from None
        return json.loads(raw) if raw.strip() else {}

    def _system_path(self, t: BmcTarget) -> str:
        members = self._request(t, "/redfish/v1/Systems").get("Members", [])
        paths = [m["@odata.id"] for m in members]
        if len(paths) == 1:
            return paths[0]
        for path in paths:
            if self._request(t, path).get("Name") == t.system:
                return path
        raise RedfishError(f"{t.base_url}: no system named '{t.system}' among {len(paths)}")

    def power_state(self, node: str) -> str:
        t = self.targets[node]
        return self._request(t, self._system_path(t)).get("PowerState", "Unknown")

    def _reset(self, hosts: list[str], want: str, reset_type: str) -> PowerResult:
        res = PowerResult()
        for host in hosts:
            t = self.targets.get(host)
            if t is None:
                res.failed[host] = "no Redfish BMC configured for this node (site: node_groups[].bmc)"
                continue
            try:
                path = self._system_path(t)
                if self._request(t, path).get("PowerState") == want:
                    log.info("%s already %s", host, want)
                else:
                    self._request(t, f"{path}/Actions/ComputerSystem.Reset", {"ResetType": reset_type})
                res.done.append(host)
            except RedfishError as err:
                res.failed[host] = str(err)
        return res

    def resume(self, hosts: list[str]) -> PowerResult:
        return self._reset(hosts, "On", "On")

    def suspend(self, hosts: list[str]) -> PowerResult:
        return self._reset(hosts, "Off", "GracefulShutdown")
