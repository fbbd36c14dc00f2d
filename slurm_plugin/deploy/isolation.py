"""Checking isolation on a real cluster: a mix of sensitive and other jobs, each of which appends
``start|end JOB NODE UPTIME WALLCLOCK`` to one trace file (O_APPEND: one total order of events across the nodes
of a one-host cluster), and the pure check of that trace.

A violation is: another job's event on a node between a sensitive job's start and end there (shared node),
a sensitive job starting while another job is active on its node, or a job starting on a node after a
sensitive job there without the node having booted in between: its boot time (wall clock minus uptime) is not
later than the sensitive job's end. (Comparing uptimes alone is wrong: a job that starts long after the reboot
shows a larger uptime than the sensitive job had at its end; the lead's CI hit exactly that.)
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .site_patch import SECURE


@dataclass(frozen=True)
class TraceEvent:
    kind: str
    job: str
    node: str
    uptime: float
    wall: float  # Unix time of the event (not namespaced, unlike the local cluster's per-boot uptime)

    @property
    def boot(self) -> float:
        """When the node last booted, as this event saw it."""
        return self.wall - self.uptime


def job_script(trace: str, seconds: float) -> str:
    line = 'echo "{0} $SLURM_JOB_ID $SLURMD_NODENAME $(cut -d" " -f1 /proc/uptime) $(date +%s.%N)" >> ' + trace
    return f"#!/bin/sh\n{line.format('start')}\nsleep {seconds}\n{line.format('end')}\n"


def mixed_jobs(n: int, sensitive_every: int, seed: int = 1) -> list[tuple[bool, list[str]]]:
    """``n`` submissions, every ``sensitive_every``-th sensitive (class secret), the others spread over the
    default partition, the sensitive nodes' own partition (x86) and no partition; (sensitive, sbatch args)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if sensitive_every and i % sensitive_every == sensitive_every - 1:
            out.append((True, ["--comment", "class=secret"]))
        else:
            out.append((False, rng.choice([["-p", "x86"], ["-p", "batch"], []])))
    return out


def parse(text: str) -> list[TraceEvent]:
    events = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[0] in ("start", "end"):
            events.append(TraceEvent(parts[0], parts[1], parts[2], float(parts[3]), float(parts[4])))
    return events


def violations(events: list[TraceEvent], sensitive: set[str]) -> list[str]:
    """Every violation in ``events`` (see the module docstring), one sentence each."""
    problems = []
    active: dict[str, set[str]] = {}
    last_sensitive: dict[str, TraceEvent] = {}  # node -> end event of the last sensitive job there
    for ev in events:
        on = active.setdefault(ev.node, set())
        if ev.kind == "start":
            if ev.job in sensitive and on:
                problems.append(f"sensitive job {ev.job} started on {ev.node} while {sorted(on)} ran there")
            for other in on:
                if other in sensitive:
                    problems.append(f"job {ev.job} started on {ev.node} beside sensitive job {other}")
            prev = last_sensitive.get(ev.node)
            if prev is not None and ev.boot <= prev.wall:
                problems.append(f"job {ev.job} started on {ev.node} after sensitive job {prev.job} without a "
                                f"power cycle (booted at {ev.boot:.2f}, before that job ended at {prev.wall:.2f})")
            last_sensitive.pop(ev.node, None)
            on.add(ev.job)
        else:
            on.discard(ev.job)
            if ev.job in sensitive:
                last_sensitive[ev.node] = ev
    return problems


__all__ = ["SECURE", "TraceEvent", "job_script", "mixed_jobs", "parse", "violations"]
