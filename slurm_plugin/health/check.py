"""The node health check Slurm runs as ``HealthCheckProgram``: snapshot -> pure decision -> the one applier.

:func:`gather` reads what is new since the last run (log lines past a per-file cursor, the accelerator tools that
are installed (:mod:`.tools`: nvidia-smi, rocm-smi, npu-smi, xpu-smi), the node's Slurm state and running jobs);
:func:`decide` turns the matches and the remembered counts into actions (pure); :func:`run_check` applies them through :class:`~slurm_plugin.decision.SlurmApplier`
and saves the memory (the cursor, counts within their windows, the drains it made) in ``<state-dir>/<node>.json``.

Rules (every action tagged ``hetsched: health ...`` so only the check's own drains are ever resumed):

- ``count`` signatures drain once ``threshold.count`` matches fall within ``threshold.window_s``; that drain is
  lifted when the window has passed with fewer matches.
- ``drain`` and ``replace`` drain and stay (an admin resumes, after the repair); ``drain_reboot`` drains and
  stays until the node has rebooted (its boot time is later than the drain) and a run finds nothing new.
- ``requeue``, ``drain_reboot`` and ``replace`` requeue the jobs running on the node; ``drain_reboot`` then has
  Slurm reboot it (``scontrol reboot ASAP nextstate=RESUME reason=...``: drained until idle, RebootProgram,
  back in service when it registers again); where the reboot is refused (no RebootProgram) it only drains.
- A node powered down, powering up or down, or rebooting is left alone (nothing read, nothing changed); a node
  an admin drained (a reason without the tag) is never touched.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING

from ..decision.actions import TAG, Cause, Decision, DrainNodes, RequeueJobs
from ..fsio import exclusive_lock, write_file_atomic
from ..slurm.client import SlurmClient, SlurmError, parse_scontrol_oneliner
from .bmc import LOG_CURSOR, SEL_CURSOR, read_bmc
from .generations import for_generation, generation
from .signatures import ACTION_RANK, Library, Signature, load_library
from .tools import tool_records

if TYPE_CHECKING:
    from ..site import Site
    from .site_facts import BmcSite

log = logging.getLogger(__name__)
REASON = "health"  # reasons read "hetsched: health <what>"; OURS is what the check recognises as its own
OURS = f"{TAG} {REASON}"
SKIP_FLAGS = ("POWERED_DOWN", "POWERING_UP", "POWER_DOWN", "POWERING_DOWN", "REBOOT_REQUESTED", "REBOOT_ISSUED",
              "NOT_RESPONDING")
STICKY = ("drain", "drain_reboot", "replace")
REQUEUE = ("requeue", "drain_reboot", "replace")
MAX_READ = 64 << 20  # never read more than this of one log per run (a first run on a huge log reads its tail)


@dataclass
class Memory:
    """What one node's check keeps between runs (JSON in ``<state-dir>/<node>.json``)."""

    cursors: dict[str, list[int]] = field(default_factory=dict)  # path -> [inode, byte offset]
    counts: dict[str, list[float]] = field(default_factory=dict)  # signature id -> match times within its window
    drained: dict | None = None  # {"signature", "action", "at", "reason"} of the drain the check made

    @classmethod
    def load(cls, path: Path) -> Memory:
        try:
            raw = json.loads(path.read_text())
            return cls(dict(raw.get("cursors", {})), dict(raw.get("counts", {})), raw.get("drained"))
        except FileNotFoundError:
            return cls()
        except (ValueError, TypeError, AttributeError) as exc:
            log.warning("%s: unreadable (%s): starting fresh", path, exc)
            return cls()


@dataclass(frozen=True)
class Hit:
    """A signature matched at time ``t`` (``where``: the file or tool it came from, ``line`` what matched)."""

    signature: Signature
    t: float
    where: str
    line: str


@dataclass(frozen=True)
class NodeFacts:
    """The node as Slurm shows it: state words (upper case), its drain reason, running jobs, boot time."""

    name: str
    state: tuple[str, ...]
    reason: str = ""
    running_jobs: tuple[int, ...] = ()
    boot_time: float = 0.0

    @property
    def drained(self) -> bool:
        return any(w in ("DRAIN", "DRAINED", "DRAINING") for w in self.state)

    @property
    def ours(self) -> bool:
        return self.reason.startswith(OURS)

    @property
    def skip(self) -> str | None:
        """Why this node must be left alone now, or None."""
        hit = [w for w in self.state if w in SKIP_FLAGS]
        return f"node is {'+'.join(hit).lower()}" if hit else None


# ------------------------------------------------------------------------------------------ snapshot


def read_new_lines(paths: Iterable[str], cursors: Mapping[str, list[int]]) -> tuple[list[tuple[str, str]], dict]:
    """(path, line) of every complete line appended to ``paths`` since ``cursors``, and the new cursors. A file
    with a new inode or shorter than the cursor (rotated, truncated) is read from its start; a missing file is
    skipped. A partial last line is left for the next run."""
    out: list[tuple[str, str]] = []
    new = dict(cursors)
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        inode, offset = cursors.get(path, [st.st_ino, 0])
        if inode != st.st_ino or offset > st.st_size:
            offset = 0
        offset = max(offset, st.st_size - MAX_READ)
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(st.st_size - offset)
        end = data.rfind(b"\n") + 1
        out += zip(repeat(path), data[:end].decode("utf-8", "replace").splitlines())
        new[path] = [st.st_ino, offset + end]
    return out, new


def node_facts(client: SlurmClient, node: str) -> NodeFacts:
    """The node's state, reason and running jobs from ``scontrol -o show node`` and ``squeue``."""
    out = client.run("scontrol", "-o", "show", "node", node, timeout=15).stdout
    rec = parse_scontrol_oneliner(out.strip().splitlines()[0] if out.strip() else "")
    state = tuple(w for w in rec.get("State", "UNKNOWN").replace("*", "").split("+") if w)
    reason = rec.get("Reason", "")
    if reason.endswith("]") and "@" in reason.rsplit("[", 1)[-1]:
        reason = reason.rsplit(" [", 1)[0]  # "text [user@time]"
    boot = 0.0
    try:
        boot = time.mktime(time.strptime(rec.get("BootTime", ""), "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        pass
    jobs = client.run("squeue", "-h", "-w", node, "-t", "RUNNING", "-o", "%A", timeout=15, check=False).stdout
    return NodeFacts(node, state, reason, tuple(int(j) for j in jobs.split() if j.isdigit()), boot)


# ------------------------------------------------------------------------------------------ decision


def match_lines(lib: Library, lines: Iterable[tuple[str, str]], now: float) -> list[Hit]:
    lines = list(lines)
    texts = list(map(itemgetter(1), lines))
    return [Hit(sig, now, lines[i][0], texts[i]) for i, sig in lib.classify_all(texts)]


def match_records(lib: Library, records: Iterable[tuple[str, dict]], now: float) -> list[Hit]:
    """Every json signature each tool record matches (one record may show several faults)."""
    return [Hit(s, now, tool, json.dumps(rec)) for tool, rec in records for s in lib.signatures
            if s.kind == "json" and s.matches_obj(rec)]


def _label(sig: Signature) -> str:
    return str(sig.extra.get("name") or sig.id)


def decide(facts: NodeFacts, hits: list[Hit], memory: Memory, now: float,
           windows: Mapping[str, int] | None = None, reboot: bool = True) -> tuple[Decision, Memory, list[str]]:
    """The actions for this run, the memory for the next, and one line per finding (for the log). Pure.
    ``windows``: signature id -> threshold window (s) of every counted signature, to forget old counts;
    ``reboot``: a ``drain_reboot`` finding has Slurm reboot the node (else it only drains)."""
    counts = {k: list(v) for k, v in memory.counts.items()}
    notes: list[str] = []
    verdict: tuple[Hit, str] | None = None  # (hit, effective action) of the strongest finding
    for hit in hits:
        sig = hit.signature
        action = sig.action
        if action == "count":
            n, window = sig.threshold or (1, 1)
            times = [t for t in counts.get(sig.id, []) if t > now - window] + [hit.t]
            counts[sig.id] = times
            if len(times) < n:
                notes.append(f"{sig.id}: {len(times)}/{n} within {window} s")
                continue
            action = "drain"
        if action == "ignore":
            continue
        notes.append(f"{sig.id}: {action} ({hit.where}: {hit.line[:160]})")
        if verdict is None or ACTION_RANK[action] > ACTION_RANK[verdict[1]]:
            verdict = (hit, action)
    # forget counts whose windows have passed
    windows = {**(windows or {}), **{h.signature.id: (h.signature.threshold or (1, 1))[1] for h in hits}}
    counts = {k: [t for t in v if t > now - windows.get(k, 7 * 86400)] for k, v in counts.items()}
    counts = {k: v for k, v in counts.items() if v}
    drained = memory.drained
    actions: list = []
    if verdict is not None:
        hit, action = verdict
        sig = hit.signature
        if action in REQUEUE and facts.running_jobs:
            actions.append(RequeueJobs(facts.running_jobs, f"{REASON} {_label(sig)} on {facts.name}: {sig.fault_class}",
                                       Cause.FAULT_SIGNATURE))
        if action != "requeue":
            reason = f"{REASON} {_label(sig)}: {sig.fault_class} ({action}) [{sig.id}]"
            if facts.drained and not facts.ours:
                notes.append(f"left alone: drained by someone else ({facts.reason!r})")
            else:
                if not (facts.drained and facts.ours and drained and
                        ACTION_RANK[drained["action"]] >= ACTION_RANK[action]):
                    how = "REBOOT" if action == "drain_reboot" and reboot else "DRAIN"
                    actions.append(DrainNodes((facts.name,), how, reason, Cause.FAULT_SIGNATURE))
                    drained = {"signature": sig.id, "action": action, "at": now, "reason": f"{TAG} {reason}",
                               "from_count": sig.action == "count"}
    elif facts.drained and facts.ours and drained is not None:
        gone = (drained.get("from_count") and drained["signature"] not in counts) or \
               (drained["action"] == "drain_reboot" and facts.boot_time > drained["at"])
        if gone:
            actions.append(DrainNodes((facts.name,), "RESUME", f"{REASON}: {drained['signature']} is over",
                                      Cause.HEALTHY_AGAIN))
            notes.append(f"resume: {drained['signature']} is over")
            drained = None
    elif not facts.drained:
        drained = None  # resumed by someone: forget our drain
    return Decision(tuple(actions), "health"), Memory(memory.cursors, counts, drained), notes


# ------------------------------------------------------------------------------------------ run


@dataclass(frozen=True)
class CheckResult:
    node: str
    skipped: str | None
    lines_read: int
    findings: list[str]
    actions: list[dict]
    tools_absent: list[str]
    seconds: float
    bmc: dict = field(default_factory=dict)  # {protocol, sel_entries, records, log_entries, error} with a BMC
    gpu_generation: str | None = None  # the Xid catalog column its Xids were read for (None: not known)

    def as_dict(self) -> dict:
        return asdict(self)


def run_check(node: str, logs: list[str], state_dir: Path, client: SlurmClient, lib: Library | None = None,
              dry_run: bool = False, tools: bool = True, tool_timeout: float = 5.0, tool_path: str | None = None,
              now: float | None = None, site: Site | BmcSite | None = None, bmc_timeout: float = 5.0,
              reboot: bool = True, gpu_type: str | None = None) -> CheckResult:
    """One health check of ``node``: gather, decide, apply, remember. ``logs`` may contain ``{node}``; with a
    ``site`` whose node group has a BMC (a Site, or :class:`~.site_facts.BmcSite` from the site's facts), its
    SEL (IPMI) or health (Redfish) too, within ``bmc_timeout``. Xids are read for the node's GPU generation
    (:mod:`.generations`) of NVIDIA GPU type ``gpu_type``."""
    from ..decision.applier import SlurmApplier, commands_for

    t0 = time.monotonic()
    now = time.time() if now is None else now
    lib = lib or load_library()
    facts = node_facts(client, node)
    if facts.skip:
        return CheckResult(node, facts.skip, 0, [], [], [], time.monotonic() - t0)
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / f"{node}.json"
    with exclusive_lock(state_dir / f"{node}.lock"):
        memory = Memory.load(path)
        lines, cursors = read_new_lines([p.replace("{node}", node) for p in logs], memory.cursors)
        hits = match_lines(lib, lines, now)
        absent: list[str] = []
        if tools:
            records, absent = tool_records(tool_timeout, tool_path)
            hits += match_records(lib, records, now)
        bmc: dict = {}
        if site is not None:
            reading = read_bmc(site, node, cursors.get(SEL_CURSOR), bmc_timeout,
                               {k: v for k, v in cursors.items() if k.startswith(LOG_CURSOR)})
            if reading.sel_cursor is not None:
                cursors[SEL_CURSOR] = reading.sel_cursor
            cursors.update(reading.log_cursors)
            hits += match_lines(lib, [("bmc-sel", line) for line in reading.sel_lines], now)
            hits += match_records(lib, [("redfish", rec) for rec in reading.records], now)
            hits += match_records(lib, [("redfish-log", entry) for entry in reading.log_entries], now)
            bmc = {"protocol": reading.protocol, "sel_entries": len(reading.sel_lines),
                   "records": len(reading.records), "log_entries": len(reading.log_entries),
                   "error": reading.error}
            if reading.error:
                log.warning("%s", reading.error)
        gen = generation(gpu_type)
        if gen is not None:
            hits = [h if (sig := for_generation(h.signature, gen)) is h.signature else replace(h, signature=sig)
                    for h in hits]
        hits = [h for h in hits if h.signature.action != "ignore"]  # (decide passes them over; most of a log's)
        windows = {s.id: s.threshold[1] for s in lib.signatures if s.threshold}
        decision, memory, notes = decide(facts, hits, Memory(cursors, memory.counts, memory.drained), now, windows,
                                         reboot=reboot)
        applier = SlurmApplier(client, dry_run=dry_run)
        applied = applier.apply(decision)
        for i, a in enumerate(applied):
            if not a.ok and isinstance(a.action, DrainNodes) and a.action.action == "REBOOT":
                # no RebootProgram (or the reboot refused): drain, as without --reboot
                log.warning("%s: reboot failed (%s): draining instead", node, a.error)
                applied[i] = applier.apply(Decision((replace(a.action, action="DRAIN"),), "health"))[0]
        failed = [a for a in applied if not a.ok]
        if failed and any(isinstance(a.action, DrainNodes) and a.action.action != "RESUME" for a in failed):
            memory = Memory(memory.cursors, memory.counts, None)  # not drained after all: decide again next run
        write_file_atomic(path, json.dumps(asdict(memory)))
    return CheckResult(node, None, len(lines), notes + ([bmc["error"]] if bmc.get("error") else []),
                       [{"kind": a.action.kind, "commands": commands_for(a.action), "status": a.status,
                         "error": a.error} for a in applied], absent, time.monotonic() - t0, bmc, gen)
