"""sushy-tools' emulator (with the BIOS-keeping fake driver of :mod:`bios_emulator`) whose resources can be made
to report a fault: ``$HETSCHED_TEST_REDFISH_HEALTH`` names a JSON file ``{URL path: {dotted field: value}}``
(e.g. ``{"/redfish/v1/Chassis/X/Thermal": {"Temperatures.0.Status.Health": "Critical"}}``), applied to each
response of that path as it is sent, so a test changes the BMC's health by rewriting the file. Run as
``python -m tests.integration.health_emulator <sushy-emulator arguments>``."""

from __future__ import annotations

import json
import os
import sys

import flask
from sushy_tools.emulator import main as emulator

from tests.integration import bios_emulator  # noqa: F401 - its fake driver patches (BIOS)


def _set(doc, dotted: str, value) -> None:
    parts = dotted.split(".")
    for part in parts[:-1]:
        doc = doc[int(part)] if isinstance(doc, list) else doc.setdefault(part, {})
    doc[parts[-1]] = value


def override(response: flask.Response) -> flask.Response:
    path = os.environ.get("HETSCHED_TEST_REDFISH_HEALTH", "")
    try:
        with open(path) as f:
            changes = json.load(f).get(flask.request.path.rstrip("/"), {})
    except (OSError, ValueError):
        return response
    if changes and response.is_json:
        doc = response.get_json()
        for field, value in changes.items():
            _set(doc, field, value)
        response.set_data(json.dumps(doc))
    return response


emulator.app.after_request(override)

if __name__ == "__main__":
    sys.argv[0] = "sushy-emulator"
    sys.exit(emulator.main())
