"""sushy-tools' emulator whose fake driver keeps BIOS attributes the way a BMC does: a PATCH of
``BIOS/Settings`` is pending (shown by ``GET BIOS/Settings``) and becomes current (``GET BIOS``) when the system
next powers on or restarts. Run as ``python -m tests.integration.bios_emulator <sushy-emulator arguments>``.
(sushy-tools' own fake driver has no BIOS; its libvirt driver does, and there is no libvirt here.)"""

from __future__ import annotations

import sys
import time

import flask
from sushy_tools.emulator import main as emulator
from sushy_tools.emulator.resources.systems import fakedriver

DEFAULTS = {"BootMode": "Uefi", "ProcTurboMode": "Disabled", "L2Cache": "10x256 KB", "NumCores": "10"}
Driver = fakedriver.FakeDriver
_update_if_needed = Driver._update_if_needed


def get_bios(self, identity):
    system = self._get(identity)
    current = {**DEFAULTS, **system.get("bios", {})}
    if flask.has_request_context() and flask.request.path.rstrip("/").endswith("/Settings"):
        return {**current, **system.get("bios_pending", {})}
    return current


def set_bios(self, identity, attributes):
    system = self._get(identity)
    self._update(system, bios_pending={**system.get("bios_pending", {}), **attributes})


def reset_bios(self, identity):
    self._update(self._get(identity), bios={}, bios_pending={})


def update_if_needed(self, system):
    pending = system.get("pending_power")
    boots = bool(pending) and time.time() >= pending["apply_time"] and \
        ("On" in pending["power_state"] or "Restart" in pending["power_state"])
    system = _update_if_needed(self, system)
    if boots and system.get("bios_pending"):
        self._update(system, bios={**system.get("bios", {}), **system["bios_pending"]}, bios_pending={})
    return system


Driver.get_bios, Driver.set_bios, Driver.reset_bios, Driver._update_if_needed = (get_bios, set_bios, reset_bios,
                                                                                  update_if_needed)

if __name__ == "__main__":
    sys.argv[0] = "sushy-emulator"
    sys.exit(emulator.main())
