"""The node's BMC inside the health check: what its event log and its health say, for the signature library.

- IPMI: the System Event Log entries added since the last run (``ipmitool sel elist``; the record id of the last
  one seen is the cursor; a SEL cleared since - its newest id below the cursor - is read from its start). Each
  entry is one text line for the ``ipmi`` signatures.
- Redfish: ``Status.Health`` of the ComputerSystem, each Chassis it links and their ``Thermal`` and ``Power``
  resources with every member (Temperatures, Fans, PowerSupplies, Voltages: one JSON object each, as the BMC
  sent it, with its ``@odata.id``) for the ``redfish`` signatures. Health is a state, read every run.
  And the event logs: every LogService of the System and of each Manager that manages it (``LogServices`` ->
  each service's ``Entries``, following ``Members@odata.nextLink``), the LogEntry objects added since the last
  run (cursor per Entries collection: the newest entry's ``Created`` time and numeric ``Id``; a log whose newest
  entry is older than the cursor was cleared and is read from its start). The first run reads the whole log.

Every read has one deadline per BMC (:func:`read_bmc`): a BMC that does not answer in time yields an error
line for the check's log and nothing else, so one bad BMC cannot stall the check (the call goes on in a daemon
thread the process does not wait for; ipmitool and the HTTP requests have their own time limits too).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

SEL_CURSOR = "bmc-sel"  # key of the SEL cursor among the check's cursors: [0, last record id]
LOG_CURSOR = "redfish-log:"  # + an Entries collection's path: [Created of its newest entry (epoch s), its Id]
MAX_PAGES = 50  # Members@odata.nextLink pages read per log and run
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
    log_entries: list[dict] = field(default_factory=list)  # Redfish LogEntry objects new since the last run
    log_cursors: dict[str, list[int]] = field(default_factory=dict)  # LOG_CURSOR + Entries path -> cursor


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


def _link(doc: Mapping, key: str) -> str | None:
    ref = doc.get(key)
    path = ref.get("@odata.id") if isinstance(ref, Mapping) else None
    return path if isinstance(path, str) and path else None


def _get(rf: Any, t: Any, path: str) -> dict | None:
    """GET ``path``; None when the BMC links it but does not serve it (HTTP 404)."""
    from ..power.redfish import RedfishError

    try:
        return rf._request(t, path)
    except RedfishError as err:
        if "HTTP 404" in str(err):
            return None
        raise


def redfish_health(rf: Any, node: str) -> list[dict]:
    """The System, its Chassis, their Thermal/Power resources and those resources' members (as JSON objects);
    the System first."""
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
            ref = _link(chassis, sub)
            doc = _get(rf, t, ref) if ref else None
            if doc is None:
                continue  # not linked, or linked but not served: nothing to say
            out.append(doc)
            out += [m for a in arrays for m in doc.get(a) or [] if isinstance(m, dict)]
    return out


def _entry_key(entry: Mapping) -> tuple[int, int]:
    """(Created as epoch seconds, numeric Id) of a LogEntry; 0 for what is missing or not a number."""
    created = 0
    try:
        created = int(datetime.fromisoformat(str(entry.get("Created", "")).replace("Z", "+00:00")).timestamp())
    except ValueError:
        pass
    ident = str(entry.get("Id", ""))
    return created, int(ident) if ident.isdigit() else 0


def new_log_entries(entries: list[dict], cursor: list[int] | None) -> tuple[list[dict], list[int] | None]:
    """The entries newer than ``cursor`` and the new cursor (the newest entry's key). Pure. A log whose newest
    entry is older than the cursor was cleared since: all of it is new."""
    if not entries:
        return [], cursor
    keyed = [(_entry_key(e), e) for e in entries]
    newest = max(k for k, _ in keyed)
    last = tuple(cursor) if cursor else None
    if last is not None and newest < last:
        last = None
    return [e for k, e in keyed if last is None or k > last], list(newest)


def redfish_logs(rf: Any, node: str, system: Mapping, cursors: Mapping[str, list[int]],
                 deadline: float = float("inf")) -> tuple[list[dict], dict[str, list[int]]]:
    """The LogEntry objects added since ``cursors`` to every log service of ``system`` and of the Managers in its
    ``Links.ManagedBy``, and the new cursors. Past ``deadline`` (``time.monotonic()``) no further page is read:
    what was read counts and the cursor moves to it (a long first read goes on at the next run when the BMC
    pages oldest first; a BMC paging newest first has its newest entries read and older ones left)."""
    t = rf._target(node)
    owners = [system] + [doc for m in (system.get("Links") or {}).get("ManagedBy") or []
                         if isinstance(m, Mapping) and m.get("@odata.id")
                         and (doc := _get(rf, t, m["@odata.id"])) is not None]
    out: list[dict] = []
    new_cursors: dict[str, list[int]] = {}
    for owner in owners:
        services = _get(rf, t, ref) if (ref := _link(owner, "LogServices")) else None
        for member in (services or {}).get("Members") or []:
            service = _get(rf, t, member["@odata.id"]) if isinstance(member, Mapping) else None
            path = _link(service, "Entries") if service else None
            if path is None:
                continue
            entries: list[dict] = []
            page: str | None = path
            for _ in range(MAX_PAGES):
                doc = _get(rf, t, page) if page and (not entries or time.monotonic() < deadline) else None
                if doc is None:
                    break
                entries += [e for e in doc.get("Members") or [] if isinstance(e, dict)]
                page = doc.get("Members@odata.nextLink")
            key = LOG_CURSOR + path
            new, cursor = new_log_entries(entries, cursors.get(key))
            out += new
            if cursor is not None:
                new_cursors[key] = cursor
    return out, new_cursors


def _read(site: Any, node: str, sel_cursor: list[int] | None, timeout: float,
          log_cursors: Mapping[str, list[int]]) -> BmcReading:
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
        start = time.monotonic()
        rf = redfish.RedfishPower({node: rt}, timeout=timeout)
        records = redfish_health(rf, node)
        entries, cursors = redfish_logs(rf, node, records[0], log_cursors, start + 0.7 * timeout)
        return BmcReading("redfish", records=records, log_entries=entries, log_cursors=cursors)
    return BmcReading()


def read_bmc(site: Any, node: str, sel_cursor: list[int] | None, timeout: float = 5.0,
             log_cursors: Mapping[str, list[int]] | None = None) -> BmcReading:
    """Read ``node``'s BMC as the site configures it (IPMI or Redfish; none: an empty reading), giving up after
    ``timeout`` seconds in all (the reading then carries only the error). ``log_cursors``: the Redfish log
    cursors of the last run (keys :data:`LOG_CURSOR` + path)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["reading"] = _read(site, node, sel_cursor, timeout, log_cursors or {})
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
