"""Run a replay on the real local cluster and record what Slurm did.

A :class:`SlurmRecorder` thread polls, about once a second: ``squeue -t all`` (each job's state, submit, start
and end, nodes, features, GRES; slurmctld forgets finished jobs after MinJobAge, so they are caught while it
still shows them), ``sprio`` (each pending job's SiteFactor: its first value and every change) and
``sinfo -N`` (each node's power state: ``~`` off, ``#`` powering up, ``%`` powering down), and keeps each job's
(state, reason) transitions (``Priority``/``Resources``/``PowerUp``..., ``CONFIGURING``: allocated, waiting for
booting nodes) and the host's load average every ``LOAD_EVERY_S``; the existing
:class:`~slurm_plugin.sim.fidelity.BackfillRecorder` polls ``sdiag`` for the backfill cycles and their counters.
:func:`record_replay` submits the jobs at their offsets and returns one JSON-able record of the whole run.
"""

from __future__ import annotations

import logging
import os
import re
import time
from datetime import datetime

from ..slurm import SlurmClient
from .fidelity import BackfillRecorder, Poller, ReplayJob, submit_at_offsets

log = logging.getLogger(__name__)
FINAL = {"COMPLETED", "TIMEOUT", "FAILED", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL",
         "DEADLINE"}
_SQUEUE_FORMAT = "%i|%T|%V|%S|%e|%N|%f|%b|%r"
LOAD_EVERY_S = 10.0


def _epoch(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:  # N/A, Unknown
        return None


def power_symbol(state: str) -> str:
    """The power part of a short sinfo state: ``off`` (``~``), ``booting`` (``#``), ``shutting`` (``%``, and
    ``!`` pending power-down, still on), else ``on``."""
    if state.endswith("~"):
        return "off"
    if state.endswith("#"):
        return "booting"
    if state.endswith("%"):
        return "shutting"
    return "on"


class SlurmRecorder(Poller):
    """Polls squeue/sprio/sinfo every ``every_s`` in a thread (see the module docstring). ``jobs``: id ->
    latest squeue fields; ``site_factor``: id -> [(epoch, value)] changes; ``power``: node ->
    [(epoch, state)] changes, state as :func:`power_symbol`; ``transitions``: id -> [(epoch, state, reason)]
    changes as polled; ``load``: [(epoch, 1-min, 5-min, 15-min load average)]."""

    def __init__(self, client: SlurmClient, every_s: float = 1.0):
        super().__init__(every_s, "slurm-recorder")
        self.client = client
        self.jobs: dict[int, dict] = {}
        self.site_factor: dict[int, list[tuple[float, int]]] = {}
        self.power: dict[str, list[tuple[float, str]]] = {}
        self.transitions: dict[int, list[tuple[float, str, str]]] = {}
        self.load: list[tuple[float, float, float, float]] = []
        self.polls = 0

    def poll(self) -> None:
        now = time.time()
        if not self.load or now - self.load[-1][0] >= LOAD_EVERY_S:
            self.load.append((now, *os.getloadavg()))
        self._jobs(now, self.client.run("squeue", "-h", "-t", "all", "-o", _SQUEUE_FORMAT).stdout)
        self._site_factors(now, self.client.run("sprio", "-h", "-o", "%i|%S", check=False).stdout)
        self._nodes(now, self.client.run("sinfo", "-h", "-N", "-o", "%N|%t").stdout)
        self.polls += 1

    def _jobs(self, now: float, text: str) -> None:
        for line in text.splitlines():
            f = line.split("|")
            if len(f) != 9 or not f[0].isdigit():
                continue
            jid = int(f[0])
            old = self.jobs.get(jid)
            if old and old["state"] in FINAL:
                continue
            self.jobs[jid] = {"state": f[1], "submit": _epoch(f[2]), "start": _epoch(f[3]), "end": _epoch(f[4]),
                              "nodelist": f[5], "features": f[6], "gres": f[7], "reason": f[8]}
            seen = self.transitions.setdefault(jid, [])
            if not seen or seen[-1][1:] != (f[1], f[8]):
                seen.append((now, f[1], f[8]))

    def _site_factors(self, now: float, text: str) -> None:
        for line in text.splitlines():
            f = line.split("|")
            if len(f) == 2 and f[0].strip().isdigit() and f[1].strip().lstrip("-").isdigit():
                jid, val = int(f[0]), int(f[1])
                seen = self.site_factor.setdefault(jid, [])
                if not seen or seen[-1][1] != val:
                    seen.append((now, val))

    def _nodes(self, now: float, text: str) -> None:
        for line in text.splitlines():
            if "|" not in line:
                continue
            node, state = line.split("|", 1)
            sym = power_symbol(state.strip())
            seen = self.power.setdefault(node.strip(), [])
            if not seen or seen[-1][1] != sym:
                seen.append((now, sym))

    def finished(self, ids: list[int]) -> bool:
        return all(self.jobs.get(i, {}).get("state") in FINAL for i in ids)


def record_replay(client: SlurmClient, jobs: list[ReplayJob], partition: str, timeout_s: float = 3600.0,
                  backfill_epoch: float | None = None) -> dict:
    """Submit ``jobs`` at their offsets (the first at once), wait until every one has ended; returns
    ``{"jobs": [...], "power", "bf_cycles", "bf_stats", "load", "polls"}`` (epoch seconds; each job with its
    ``site_factor`` and ``transitions``). A job that
    ended other than COMPLETED/TIMEOUT stays in the record with its state; the comparison reports it.
    ``backfill_epoch``: as :func:`~slurm_plugin.sim.fidelity.replay_on_slurm`."""
    if backfill_epoch is not None:
        time.sleep((0.5 - (time.time() - backfill_epoch)) % 1.0)
    with BackfillRecorder(client) as bf, SlurmRecorder(client) as rec:
        ids, walls = submit_at_offsets(client, jobs, partition)
        deadline = time.monotonic() + timeout_s
        while not rec.finished(ids):
            if time.monotonic() > deadline:
                left = [i for i in ids if rec.jobs.get(i, {}).get("state") not in FINAL]
                raise TimeoutError(f"{len(left)} replay job(s) still not ended after {timeout_s:.0f} s: {left[:10]}")
            time.sleep(1.0)
        rec.poll()
    out = []
    for jid, wall, spec in zip(ids, walls, jobs):
        r = rec.jobs.get(jid, {})
        out.append({"id": jid, "submit_wall": wall, **r, "spec": spec.__dict__,
                    "site_factor": rec.site_factor.get(jid, []), "transitions": rec.transitions.get(jid, [])})
    return {"jobs": out, "power": rec.power, "bf_cycles": bf.cycles, "bf_stats": bf.stats, "load": rec.load,
            "polls": rec.polls}



_CTLD_EVENT = re.compile(
    r"^\[(?P<ts>[0-9T:.-]+)\] (?:"
    r"sched: Allocate JobId=(?P<main>\d+)"
    r"|sched/backfill: _start_job: Started JobId=(?P<bf>\d+)"
    r"|job_time_limit: Configuration for JobId=(?P<config>\d+) complete"
    r"|Time limit exhausted for JobId=(?P<limit>\d+)"
    r"|.*(?P<bfend>completed testing|breaking out after testing) (?P<tested>\d+)\((?P<depth>\d+)\) jobs"
    r")")


def ctld_events(text: str) -> dict[str, list]:
    """What slurmctld's log (info level, DebugFlags=Backfill) says happened, epoch seconds to the millisecond:
    ``start`` [(t, job, "main"|"backfill")] (which scheduler started each job), ``config_done`` [(t, job)] (a job
    allocated to booting nodes leaves CONFIGURING: slurmctld's time-limit check, every 30 s), ``time_limit``
    [(t, job)] (killed at its limit) and ``bf_end`` [(t, how, tested, queue)] (each backfill cycle's end:
    ``completed`` or ``interrupted`` when it broke off because the system state changed)."""
    out: dict[str, list] = {"start": [], "config_done": [], "time_limit": [], "bf_end": []}
    for line in text.splitlines():
        m = _CTLD_EVENT.match(line)
        if not m:
            continue
        t = _epoch(m["ts"])
        if t is None:
            continue
        if m["main"] or m["bf"]:
            out["start"].append((t, int(m["main"] or m["bf"]), "main" if m["main"] else "backfill"))
        elif m["config"]:
            out["config_done"].append((t, int(m["config"])))
        elif m["limit"]:
            out["time_limit"].append((t, int(m["limit"])))
        elif m["bfend"]:
            how = "completed" if m["bfend"] == "completed testing" else "interrupted"
            out["bf_end"].append((t, how, int(m["tested"]), int(m["depth"])))
    return out
