"""Opt-in per-request timing of the admission daemon (issue 23: what the admission p99 is made of).

With ``HETSCHED_ADMISSION_TRACE=FILE`` in its environment the daemon appends, for every request it answers,
``req <monotonic s> <wall µs> <CPU µs>``: the wall time from the complete request line to its reply (what the
``hetsched_admission_request_seconds`` histogram observes) and the CPU time the serving thread spent on it
(``time.thread_time``; wall minus CPU is time the thread waited: preempted by the OS or for the GIL). It also
samples the event loop's lag every 10 ms, ``lag <monotonic s> <µs>``: how late a timer fires, i.e. how long a
request that arrived then would have waited before the daemon could start on it. Lines are written in batches,
outside the timed part; ``time.monotonic`` is the system's CLOCK_MONOTONIC, so a client can cut the file by the
times of its own phases. Off (nothing recorded) when the variable is unset.
"""

from __future__ import annotations

import asyncio
import os
import time

TRACE_ENV = "HETSCHED_ADMISSION_TRACE"
FLUSH_EVERY = 200  # lines (about a second at 100 requests/s plus the lag samples)
LAG_PERIOD_S = 0.01


class AdmissionTrace:
    """Lines for ``path``, written every :data:`FLUSH_EVERY` and by :meth:`flush`."""

    def __init__(self, path: str):
        self.path = path
        self.lines: list[str] = []

    @classmethod
    def from_env(cls) -> AdmissionTrace | None:
        path = os.environ.get(TRACE_ENV)
        return cls(path) if path else None

    def request(self, wall_s: float, cpu_s: float) -> None:
        self._add(f"req {time.monotonic():.6f} {wall_s * 1e6:.1f} {cpu_s * 1e6:.1f}\n")

    def lag(self, lag_s: float) -> None:
        self._add(f"lag {time.monotonic():.6f} {lag_s * 1e6:.1f}\n")

    def _add(self, line: str) -> None:
        self.lines.append(line)
        if len(self.lines) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        if self.lines:
            with open(self.path, "a") as fh:
                fh.writelines(self.lines)
            self.lines.clear()

    async def sample_lag(self, stop: asyncio.Event) -> None:
        """Until ``stop``: how late a :data:`LAG_PERIOD_S` sleep wakes, every period."""
        while not stop.is_set():
            t0 = time.perf_counter()
            await asyncio.sleep(LAG_PERIOD_S)
            self.lag(max(time.perf_counter() - t0 - LAG_PERIOD_S, 0.0))


def read_trace(path: str, since: float, until: float) -> dict[str, list[float]]:
    """``{"wall_us": [...], "cpu_us": [...], "lag_us": [...]}`` of the trace lines in [since, until]."""
    out: dict[str, list[float]] = {"wall_us": [], "cpu_us": [], "lag_us": []}
    try:
        with open(path) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) < 3 or not since <= float(parts[1]) <= until:
                    continue
                if parts[0] == "req" and len(parts) == 4:
                    out["wall_us"].append(float(parts[2]))
                    out["cpu_us"].append(float(parts[3]))
                elif parts[0] == "lag":
                    out["lag_us"].append(float(parts[2]))
    except FileNotFoundError:
        pass
    return out
