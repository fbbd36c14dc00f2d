"""Checks on the signature library as a whole, and its coverage per vendor.

:func:`problems` rejects what loading one entry cannot see: duplicate ids, a matcher that does not match its own
example (unreachable: nothing in the documented format would ever reach it, e.g. a prefilter the line lacks),
one that matches its own counterexample, overlapping matchers (another signature matches this one's example),
and an example that an earlier signature would take first. Proving two regular expressions disjoint in general
is out of reach; the examples are the witnesses, so every signature carries one line in its documented format.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from .signatures import ACTIONS, Library


def problems(lib: Library) -> list[str]:
    """Every problem of ``lib`` as ``file: id: what`` (empty when the library is sound)."""
    out: list[str] = []
    for sig_id, n in Counter(s.id for s in lib.signatures).items():
        if n > 1:
            out.append(f"{sig_id}: id used {n} times")
    for s in lib.signatures:
        where = f"{s.file}: {s.id}"
        if not s.matches(s.example):
            why = f" (prefilter {s.prefilter!r} not in it)" if s.prefilter and s.prefilter not in s.example else ""
            out.append(f"{where}: unreachable: does not match its own example{why}")
        if s.matches(s.counterexample):
            out.append(f"{where}: matches its own counterexample")
        others = [o.id for o in lib.matching(s.example) if o.id != s.id]
        if others:
            out.append(f"{where}: overlaps {', '.join(others)} (they match its example too)")
        first = lib.classify(s.example)
        if first is not None and first.id != s.id and s.matches(s.example):
            out.append(f"{where}: shadowed: its example is classified as {first.id}")
    return out


# what `hetsched health check` reads for each vendor's signatures (the coverage table's "checks" column)
CHECKS = {
    "amd": "kernel log (amdgpu RAS lines); rocm-smi --showtemp --showuse --showmemuse --showxgmierr --json",
    "huawei": "npu-smi info (Health of each chip); MindX records as JSON lines in a --log file",
    "intel": "kernel log (i915); xpu-smi discovery -j + stats -d ID -j (RAS error counters)",
    "ipmi": "BMC SEL: ipmitool sel elist past a record-id cursor (site bmc protocol ipmi)",
    "linux": "kernel log",
    "nvidia": "kernel log (Xid, SXid); nvidia-smi --query-gpu (row remap, retired pages, ECC, throttle)",
    "nvidia-networking": "kernel log (mlx5_core, IB); port counters as JSON lines in a --log file",
    "nvme": "kernel log; SMART log as JSON lines in a --log file",
    "pci-sig": "kernel log (AER, DPC, pciehp)",
    "redfish": "BMC: Status.Health of System, Chassis, Thermal/Power and members, and the new LogEntry records "
               "of the System's and its Managers' LogServices (site bmc protocol redfish)",
    "x86": "kernel log (MCE, EDAC, thermal)",
}


def coverage(lib: Library) -> dict[str, Any]:
    """Counts per vendor (with subsystems and actions) and in total: the coverage table of the README."""
    per_vendor: dict[str, dict[str, Any]] = defaultdict(lambda: {"signatures": 0, "subsystems": Counter(),
                                                                  "actions": Counter(), "sources": set()})
    for s in lib.signatures:
        v = per_vendor[s.vendor]
        v["signatures"] += 1
        v["subsystems"][s.subsystem] += 1
        v["actions"][s.action] += 1
        v["sources"].add(s.source)
    vendors = {name: {"signatures": v["signatures"], "subsystems": dict(sorted(v["subsystems"].items())),
                      "actions": {a: v["actions"][a] for a in ACTIONS if v["actions"][a]},
                      "sources": sorted(v["sources"]), "checks": CHECKS.get(name, "kernel log")}
               for name, v in sorted(per_vendor.items())}
    return {"total": len(lib), "vendors": vendors}


def coverage_table(lib: Library) -> str:
    """The coverage as a Markdown table (vendor | signatures | subsystems | actions)."""
    cov = coverage(lib)
    rows = ["| vendor | signatures | subsystems | actions | the check reads |", "|---|---:|---|---|---|"]
    for name, v in cov["vendors"].items():
        subs = ", ".join(f"{k} {n}" for k, n in v["subsystems"].items())
        acts = ", ".join(f"{k} {n}" for k, n in v["actions"].items())
        rows.append(f"| {name} | {v['signatures']} | {subs} | {acts} | {v['checks']} |")
    rows.append(f"| **total** | **{cov['total']}** | | | |")
    return "\n".join(rows)

