"""Job usage records from Slurm accounting for the cost report: ``sacct -P`` text (a file, or read live).

Fields read (:data:`SACCT_FIELDS`, any order, header line required in a file):
``JobID,Account,Partition,WCKey,Comment,NodeList,AllocTRES,ElapsedRaw``. Job steps (``123.batch``) and jobs
that held no node are skipped. ``Comment`` is stored by slurmdbd only with ``AccountingStoreFlags=job_comment``;
without it the class comes from the wckey, the account, or the default class.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import hostlist

from ..admission.classify import workload_class_name
from ..workload.errors import WorkloadError
from .report import JobUse

SACCT_FIELDS = ("JobID", "Account", "Partition", "WCKey", "Comment", "NodeList", "AllocTRES", "ElapsedRaw")
_MEM = re.compile(r"^([\d.]+)([KMGTP]?)$")
_MEM_GB = {"K": 1 / 2**20, "M": 1 / 1024, "G": 1.0, "T": 1024.0, "P": 1024.0**2, "": 1 / 1024}


def parse_alloc_tres(text: str) -> tuple[float, float, dict[str, float], float | None]:
    """``billing=125,cpu=4,gres/gpu=1,mem=8G,node=1`` -> (CPUs, memory GB, {GRES name: devices}, billing);
    typed GRES counts (``gres/gpu:a100=1``) are left out, their untyped total is kept."""
    cpus, mem_gb, gres, billed = 0.0, 0.0, {}, None
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        if key == "cpu":
            cpus = float(value)
        elif key == "mem":
            m = _MEM.match(value)
            if not m:
                raise ValueError(f"memory {value!r} in AllocTRES is not a number with K/M/G/T/P")
            mem_gb = float(m[1]) * _MEM_GB[m[2]]
        elif key == "billing":
            billed = float(value)
        elif key.startswith("gres/") and ":" not in key:
            gres[key[len("gres/"):]] = float(value)
    return cpus, mem_gb, gres, billed


def read_usage(lines: Iterable[str], site, source: str = "<sacct>") -> list[JobUse]:
    """JobUse records from ``sacct -P`` lines (the first is the header); raises WorkloadError naming
    ``source``:line for a malformed one."""
    rows = iter(enumerate(lines, 1))
    try:
        _, header = next(rows)
    except StopIteration:
        return []
    names = header.rstrip("\n").split("|")
    missing = [f for f in SACCT_FIELDS if f not in names]
    if missing:
        raise WorkloadError(source, f"sacct header lacks {', '.join(missing)} (export with -P -o "
                                    f"{','.join(SACCT_FIELDS)})", 1)
    at = {f: names.index(f) for f in SACCT_FIELDS}
    out = []
    for number, line in rows:
        cells = line.rstrip("\n").split("|")
        if not line.strip():
            continue
        if len(cells) != len(names):
            raise WorkloadError(source, f"{len(cells)} fields, the header has {len(names)}", number)
        row = {f: cells[i] for f, i in at.items()}
        if "." in row["JobID"] or row["NodeList"] in ("", "None assigned"):
            continue
        try:
            cpus, mem_gb, gres, billed = parse_alloc_tres(row["AllocTRES"])
            nodes = tuple(hostlist.expand_hostlist(row["NodeList"]))
            elapsed = float(row["ElapsedRaw"] or 0)
        except (ValueError, hostlist.BadHostlist) as err:
            raise WorkloadError(source, f"job {row['JobID']}: {err}", number) from None
        out.append(JobUse(row["JobID"], row["Account"], row["Partition"],
                          workload_class_name(site, row["Comment"], row["WCKey"], row["Account"]) or "",
                          nodes, cpus, mem_gb, gres, elapsed, billed))
    return out


def live_usage(client, site, since: str = "7d", until: str = "now") -> list[JobUse]:
    """The jobs slurmdbd has for the window (``client``: a SlurmClient), as :func:`read_usage` reads them."""
    from ..workload.slurmdbd import sacct_window

    return read_usage(sacct_window(client, SACCT_FIELDS, since, until, header=True).splitlines(), site, "sacct")
