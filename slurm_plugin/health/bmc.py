"""The node's BMC inside the health check: what its event log and its health say, for the signature library.

- IPMI: the System Event Log entries added since the last run (``ipmitool sel elist``; the record id of the last
  one seen is the cursor; a SEL cleared since - its newest id below the cursor - is read from its start). Each
  entry is one text line for the ``ipmi`` signatures.
- Redfish: ``Status.Health`` of the ComputerSystem, each Chassis it links and their ``Thermal`` and ``Power``
  resources with every member (Temperatures, Fans, PowerSupplies, Voltages: one JSON object each, as the BMC
  sent it, with its ``@odata.id``) for the ``redfish`` signatures. Health is a state, read every run.

Every read has one deadline per BMC (:func:`read_bmc`): a BMC that does not answer in time yields an error
line for the check's log and nothing else, so one bad BMC cannot stall the check (the call goes on in a daemon
thread the process does not wait for; ipmitool and the HTTP requests have their own time limits too).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SEL_CURSOR = "bmc-sel"  # key of the SEL cursor among the check's cursors: [0, last record id]
SUBRESOURCES = {"Thermal": ("Temperatures", "Fans"), "Power": ("PowerSupplies", "Voltages")}


@dataclass
class BmcReading:
    """What one run got from the node's BMC: SEL text lines, Redfish records, the new SEL cursor, and why a
    read failed (empty when it did not)."""

    protocol: str = ""
    sel_lines: list[str] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)
    sel_cursor: list[int] | None = None
    error: str = ""


def sel_new_lines(elist: str, last_id: int | None) -> tuple[list[str], int | None]:
    """The entries of ``ipmitool sel elist`` output newer than record ``last_id``, and the newest id. Pure."""
    entries = []
    for line in elist.splitlines():
        head = line.split("|", 1)[0].strip()
        try:
            entries.append((int(head, 16), line))
        except ValueError:
            continue  # ipmitool's own messages ("SEL has no entries", SDR warnings on stdout)
    if not entries:
        return [], last_id
    newest = max(i for i, _ in entries)
    if last_id is not None and newest < last_id:
        last_id = None  # cleared since the last run
    return [line for i, line in entries if last_id is None or i > last_id], newest


def redfish_health(rf: Any, node: str) -> list[dict]:
    """The System, its Chassis, their Thermal/Power resources and those resources' members (as JSON objects)."""
    from ..power.redfish import RedfishError

    t = rf._target(node)
    _, system = rf._system(t)
    out = [system]
    for link in (system.get("Links") or {}).get("Chassis") or []:
        path = link.get("@odata.id") if isinstance(link, Mapping) else None
        if not path:
            continue
        chassis = rf._request(t, path)
        out.append(chassis)
        for sub, arrays in SUBRESOURCES.items():
            ref = (chassis.get(sub) or {}).get("@odata.id") if isinstance(chassis.get(sub), Mapping) else None
            if not ref:
                continue
            try:
                doc = rf._request(t, ref)
            except RedfishError as err:
                if "HTTP 404" in str(err):
                    continue  # linked but not served: nothing to say
                raise
            out.append(doc)
            out += [m for a in arrays for m in doc.get(a) or [] if isinstance(m, dict)]
    return out


def _read(site: Any, node: str, sel_cursor: list[int] | None, timeout: float) -> BmcReading:
    from ..power import ipmi, redfish

    it = ipmi.targets_from_site(site, [node]).get(node)
    if it is not None:
        reading = BmcReading("ipmi")
        power = ipmi.IpmiPower({node: it}, timeout=timeout, retries=0)
        t = power._target(node)
        lines, newest = sel_new_lines(power._ipmitool(node, t, "sel", "elist"),
                                      sel_cursor[1] if sel_cursor else None)
        reading.sel_lines = lines
        reading.sel_cursor = [0, newest] if newest is not None else sel_cursor
        return reading
    rt = redfish.targets_from_site(site, [node]).get(node)
    if rt is not None:
        return BmcReading("redfish", records=redfish_health(redfish.RedfishPower({node: rt}, timeout=timeout), node))
    return BmcReading()


def read_bmc(site: Any, node: str, sel_cursor: list[int] | None, timeout: float = 5.0) -> BmcReading:
    """Read ``node``'s BMC as the site configures it (IPMI or Redfish; none: an empty reading), giving up after
    ``timeout`` seconds in all (the reading then carries only the error)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["reading"] = _read(site, node, sel_cursor, timeout)
        except Exception as exc:  # noqa: BLE001 - any BMC failure is reported, never fatal to the check
            box["error"] = str(exc) or type(exc).__name__

    thread = threading.Thread(target=work, name=f"bmc-{node}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return BmcReading(error=f"{node}: BMC gave no answer within {timeout:g} s (skipped this run)",
                          sel_cursor=sel_cursor)
    if "error" in box:
        return BmcReading(error=f"{node}: BMC: {box['error']}", sel_cursor=sel_cursor)
    return box["reading"]
