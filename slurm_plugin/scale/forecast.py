"""A group's arrival rate from the calendar: the recent rate next to the rate seen at the same time on earlier days.

The break-even rule (:mod:`.warm`) sizes warm pools from the arrival rate over the last two hours. On a diurnal
load that rate lags: it is still low during the morning ramp (jobs wait for boots) and still high after the
evening fall (idle nodes stay warm). :func:`forecast_rate` adds what the policy itself saw one (or more) days
ago, in the window starting ``lead_s`` after the same time of day: yesterday's next two hours. Only the past is
read (the hourly counts the caller recorded); a day the history does not cover yet is skipped.

Pure: ``hourly`` maps an hour index ``h`` (the bin ``[h * 3600, (h + 1) * 3600)`` in the caller's clock) to the
jobs that arrived for the group in it.

Example (hand-computed in ``tests/unit/scale/test_forecast.py``): 10 jobs in each of hours 24-25 (yesterday's
morning ramp), a recent rate of 1 job/h at ``now = 47.5 h``, window 2 h, lead 0.5 h: yesterday's window is
24 h - 26 h, 20 jobs, 10 jobs/h; ``combine="max"`` gives 10 jobs/h, ``"mean"`` 5.5 jobs/h.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

HOUR_S = 3600.0
DAY_S = 86400.0
COMBINE = ("max", "mean")


def window_count(hourly: Mapping[int, float], start_s: float, end_s: float) -> float:
    """Arrivals in ``[start_s, end_s)`` from hourly bins; a partly covered bin counts pro rata (arrivals spread
    evenly within their hour)."""
    if end_s <= start_s:
        return 0.0
    total, h = 0.0, math.floor(start_s / HOUR_S)
    while h * HOUR_S < end_s:
        lo, hi = max(start_s, h * HOUR_S), min(end_s, (h + 1) * HOUR_S)
        total += hourly.get(h, 0.0) * (hi - lo) / HOUR_S
        h += 1
    return total


@dataclass(frozen=True)
class RateForecast:
    """``rate``: jobs per second to size the warm pool with; ``reason``: the numbers behind it."""

    rate: float
    reason: str


def forecast_rate(recent_rate: float, hourly: Mapping[int, float], now: float, window_s: float,
                  since: float, days: Sequence[int] = (1,), lead_s: float = 1800.0,
                  combine: str = "max") -> RateForecast:
    """The rate to plan with: ``recent_rate`` combined with the rate of the window ``[now - d days + lead_s,
    + window_s)`` for each ``d`` in ``days`` whose window starts at or after ``since`` (when recording began).
    ``combine="max"``: the larger of recent and the past days' mean; ``"mean"``: their average. No past day
    covered: the recent rate."""
    if combine not in COMBINE:
        raise ValueError(f"combine must be one of {COMBINE} (got {combine!r})")
    if window_s <= 0 or recent_rate < 0:
        raise ValueError(f"forecast_rate needs window_s > 0 and recent_rate >= 0 (got {window_s}, {recent_rate})")
    past = [window_count(hourly, now - d * DAY_S + lead_s, now - d * DAY_S + lead_s + window_s) / window_s
            for d in days if now - d * DAY_S + lead_s >= since]
    if not past:
        return RateForecast(recent_rate, f"recent {recent_rate * 3600:.1f} jobs/h (no earlier day yet)")
    before = sum(past) / len(past)
    rate = max(recent_rate, before) if combine == "max" else (recent_rate + before) / 2
    return RateForecast(rate, f"{combine}(recent {recent_rate * 3600:.1f}, same time {'/'.join(map(str, days))} "
                              f"day(s) before {before * 3600:.1f}) = {rate * 3600:.1f} jobs/h")
