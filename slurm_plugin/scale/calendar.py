"""When a site calendar is active, in the time zone of the nodes it applies to."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the site schema (pydantic) loads with the first site, not with this module
    from ..site.schema import Calendar


def _minutes(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def is_active(calendar: Calendar, when: dt.datetime, timezone: str) -> bool:
    """True if ``when`` (timezone-aware) falls in one of the calendar's windows, read in ``calendar.timezone``
    or else ``timezone`` (the node group's own).

    A window whose end is not after its start runs past midnight and belongs to the day it starts on:
    ``{days: [fri], start: "19:00", end: "07:00"}`` covers Friday 19:00 to Saturday 07:00.
    """
    from ..site.schema import WEEKDAYS  # loaded already: ``calendar`` is one of its models

    if when.tzinfo is None:
        raise ValueError("is_active needs a timezone-aware datetime")
    local = when.astimezone(zoneinfo.ZoneInfo(calendar.timezone or timezone))
    day, minute = WEEKDAYS[local.weekday()], local.hour * 60 + local.minute
    yesterday = WEEKDAYS[(local.weekday() - 1) % 7]
    for w in calendar.windows:
        start, end = _minutes(w.start), _minutes(w.end)
        if start < end:
            if day in w.days and start <= minute < end:
                return True
        elif (day in w.days and minute >= start) or (yesterday in w.days and minute < end):
            return True
    return False
