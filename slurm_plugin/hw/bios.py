"""BIOS attributes through Redfish (``Systems/<id>/BIOS`` and its ``@Redfish.Settings`` object): read the current
and pending values, PATCH the pending ones. Uses the power backend's BMC targets and HTTP client."""

from __future__ import annotations

from ..power.redfish import BmcTarget, RedfishError, RedfishPower


class RedfishBios(RedfishPower):
    """A node's BIOS through its Redfish BMC (``targets`` as for :class:`RedfishPower`)."""

    def _target(self, node: str) -> BmcTarget:
        t = self.targets.get(node)
        if not isinstance(t, BmcTarget):
            raise RedfishError(str(t) if t is not None else f"{node}: {self.missing}")
        return t

    def _bios_paths(self, node: str) -> tuple[BmcTarget, str, str]:
        t = self._target(node)
        path, system = self._system(t)
        bios = (system.get("Bios") or {}).get("@odata.id") or f"{path.rstrip('/')}/BIOS"
        doc = self._request(t, bios)
        settings = ((doc.get("@Redfish.Settings") or {}).get("SettingsObject") or {}).get("@odata.id") \
            or f"{bios}/Settings"
        return t, bios, settings

    def read(self, node: str) -> tuple[dict, dict]:
        """(current, pending) BIOS attributes of ``node``."""
        t, bios, settings = self._bios_paths(node)
        current = self._request(t, bios).get("Attributes") or {}
        pending = self._request(t, settings).get("Attributes") or {}
        return dict(current), dict(pending)

    def patch(self, node: str, attributes: dict) -> None:
        """PATCH ``attributes`` into the BIOS settings object (the BMC applies them at the next reboot)."""
        t, _bios, settings = self._bios_paths(node)
        self._request(t, settings, {"Attributes": attributes}, method="PATCH")
