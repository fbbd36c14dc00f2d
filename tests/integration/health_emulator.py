"""sushy-tools' emulator (with the BIOS-keeping fake driver of :mod:`bios_emulator`) whose resources can be made
to report a fault: ``$HETSCHED_TEST_REDFISH_HEALTH`` names a JSON file ``{URL path: {dotted field: value}}``
(e.g. ``{"/redfish/v1/Chassis/X/Thermal": {"Temperatures.0.Status.Health": "Critical"}}``), applied to each
response of that path as it is sent, so a test changes the BMC's health by rewriting the file.

It also serves event logs, which sushy-tools has none of: ``$HETSCHED_TEST_REDFISH_LOGS`` names a JSON file
``{owner path: {service id: [LogEntry fields, ...]}}`` (owner: a ``/redfish/v1/Systems/X`` or
``/redfish/v1/Managers/Y``); every System and Manager links its ``LogServices``, each service its ``Entries``,
served :data:`PAGE` entries a page with ``Members@odata.nextLink`` (``?$skip=N``), as a BMC pages a long log.
Run as ``python -m tests.integration.health_emulator <sushy-emulator arguments>``."""

from __future__ import annotations

import json
import os
import re
import sys

import flask
from sushy_tools.emulator import main as emulator

from tests.integration import bios_emulator  # noqa: F401 - its fake driver patches (BIOS)


def _set(doc, dotted: str, value) -> None:
    parts = dotted.split(".")
    for part in parts[:-1]:
        doc = doc[int(part)] if isinstance(doc, list) else doc.setdefault(part, {})
    doc[parts[-1]] = value


PAGE = 2
_OWNER = re.compile(r"^/redfish/v1/(Systems|Managers)/[^/]+$")


def _logs(owner: str) -> dict:
    try:
        with open(os.environ.get("HETSCHED_TEST_REDFISH_LOGS", "")) as f:
            return json.load(f).get(owner, {})
    except (OSError, ValueError):
        return {}


@emulator.app.route("/redfish/v1/<kind>/<ident>/LogServices", methods=["GET"])
def log_services(kind: str, ident: str):
    owner = f"/redfish/v1/{kind}/{ident}"
    names = list(_logs(owner))
    return flask.jsonify({"@odata.type": "#LogServiceCollection.LogServiceCollection",
                          "@odata.id": f"{owner}/LogServices", "Name": "Log Service Collection",
                          "Members": [{"@odata.id": f"{owner}/LogServices/{n}"} for n in names],
                          "Members@odata.count": len(names)})


@emulator.app.route("/redfish/v1/<kind>/<ident>/LogServices/<name>", methods=["GET"])
def log_service(kind: str, ident: str, name: str):
    owner = f"/redfish/v1/{kind}/{ident}"
    if name not in _logs(owner):
        flask.abort(404)
    path = f"{owner}/LogServices/{name}"
    return flask.jsonify({"@odata.type": "#LogService.v1_4_0.LogService", "@odata.id": path, "Id": name,
                          "Name": name, "Entries": {"@odata.id": f"{path}/Entries"}})


@emulator.app.route("/redfish/v1/<kind>/<ident>/LogServices/<name>/Entries", methods=["GET"])
def log_entries(kind: str, ident: str, name: str):
    owner = f"/redfish/v1/{kind}/{ident}"
    entries = _logs(owner).get(name)
    if entries is None:
        flask.abort(404)
    path = f"{owner}/LogServices/{name}/Entries"
    members = [{"@odata.type": "#LogEntry.v1_15_0.LogEntry", "Id": str(i), **e,
                "@odata.id": f"{path}/{e.get('Id', i)}"} for i, e in enumerate(entries, 1)]
    skip = int(flask.request.args.get("$skip", "0"))
    doc = {"@odata.type": "#LogEntryCollection.LogEntryCollection", "@odata.id": path,
           "Members": members[skip:skip + PAGE], "Members@odata.count": len(members)}
    if skip + PAGE < len(members):
        doc["Members@odata.nextLink"] = f"{path}?$skip={skip + PAGE}"
    return flask.jsonify(doc)


def override(response: flask.Response) -> flask.Response:
    if _OWNER.match(flask.request.path.rstrip("/")) and response.is_json and response.status_code == 200:
        doc = response.get_json()  # a BMC's System and Manager link their event logs
        doc["LogServices"] = {"@odata.id": f"{flask.request.path.rstrip('/')}/LogServices"}
        response.set_data(json.dumps(doc))
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
