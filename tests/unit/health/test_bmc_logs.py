"""Redfish event log reading (pure parts): which LogEntry records are new past a cursor, and the time budget on
paging (the reads themselves run against the emulator in tests/integration/test_health_bmc.py)."""

from __future__ import annotations

import time

from slurm_plugin.health.bmc import LOG_CURSOR, new_log_entries, redfish_logs


def entry(ident: str, created: str) -> dict:
    return {"Id": ident, "Created": created, "MessageId": "ResourceEvent.1.3.0.ResourceStatusChangedOK"}


def test_entries_past_the_cursor_are_new_and_a_cleared_log_is_read_again():
    log = [entry("1", "2026-12-01T10:00:00Z"), entry("2", "2026-12-01T10:00:00Z"), entry("3", "2026-12-01T10:01:00Z")]
    new, cur = new_log_entries(log, None)
    assert new == log and cur == [1796119260, 3]
    assert new_log_entries(log, cur) == ([], cur)
    new, _ = new_log_entries(log + [entry("4", "2026-12-01T10:01:00+00:00")], cur)  # same second, higher Id
    assert [e["Id"] for e in new] == ["4"]
    cleared = [entry("1", "2026-12-01T09:00:00Z")]
    assert new_log_entries(cleared, cur) == (cleared, [1796115600, 1])
    assert new_log_entries([], cur) == ([], cur)


class PagedBmc:
    """A BMC object with one System log of three pages (the RedfishPower calls redfish_logs makes)."""

    def __init__(self):
        self.gets: list[str] = []
        base = "/redfish/v1/Systems/1/LogServices"
        self.docs = {base: {"Members": [{"@odata.id": f"{base}/Log"}]},
                     f"{base}/Log": {"Entries": {"@odata.id": f"{base}/Log/Entries"}}}
        for page in range(3):
            path = f"{base}/Log/Entries" + (f"?$skip={page}" if page else "")
            doc = {"Members": [entry(str(page + 1), f"2026-12-01T10:0{page}:00Z")]}
            if page < 2:
                doc["Members@odata.nextLink"] = f"{base}/Log/Entries?$skip={page + 1}"
            self.docs[path] = doc

    def _target(self, node):
        return node

    def _request(self, t, path):
        self.gets.append(path)
        return self.docs[path]


def test_paging_stops_at_the_deadline_and_the_cursor_moves_to_what_was_read():
    system = {"LogServices": {"@odata.id": "/redfish/v1/Systems/1/LogServices"}}
    key = LOG_CURSOR + "/redfish/v1/Systems/1/LogServices/Log/Entries"
    got, cursors = redfish_logs(PagedBmc(), "n1", system, {})
    assert [e["Id"] for e in got] == ["1", "2", "3"] and cursors[key][1] == 3
    bmc = PagedBmc()
    got, cursors = redfish_logs(bmc, "n1", system, {}, deadline=time.monotonic() - 1)
    assert [e["Id"] for e in got] == ["1"] and cursors[key][1] == 1  # the first page only
    got, _ = redfish_logs(PagedBmc(), "n1", system, cursors)
    assert [e["Id"] for e in got] == ["2", "3"]  # the next run goes on from there
