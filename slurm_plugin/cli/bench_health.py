"""``hetsched bench health``: the node health check's cost on one week of logs (target < 2 s wall).

For each vendor share (the part of the lines that name a driver with signatures, so pass the literal prefilter) a
synthetic week (``health/weeklog.py``) is written, then measured: in this process the CPU time of loading the
library and classifying every line (best of ``--repeat``), and in a fresh process from fork to exit the whole
program: ``hetsched health check --dry-run --no-tools`` on a real node when ``--slurm-conf`` and ``--node`` are
given (its cursor starts at 0, so it reads the whole week), else ``hetsched health classify FILE --json`` (the
same start-up, load, read and classification, without the two Slurm queries). With ``--site`` the check gets it
as the rendered HealthCheckProgram does: ``--site`` and ``--site-facts``, the per-node facts file ``conf render``
writes (made here by the same code), so no run loads the site; ``--no-site-facts`` times the fallback (the first
run loads the site and caches the node's facts). Wall time depends on the machine's load (recorded); CPU time
(the check's and its scontrol/squeue children's user + system time) much less.
"""

from __future__ import annotations

import gc
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from .common import handle_errors
from .output import deliver, json_output_options

TARGET_S = 2.0


def _child(argv: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "exit": proc.returncode,
            "error": proc.stderr.strip()[-300:] if proc.returncode else ""}


def _case(share: float, lines: int, repeat: int, work: Path, slurm_conf: str | None, node: str | None,
          site: str | None = None, site_facts: str | None = None) -> dict:
    from ..health.signatures import load_library, signature_dir
    from ..health.weeklog import write_week

    t = time.process_time()
    lib = load_library(signature_dir())  # not the cached one: what each check pays
    load_cpu = time.process_time() - t
    faults = tuple(s.example for s in lib.signatures if s.kind == "regex")
    log = work / f"week-{share:g}.log"
    size = write_week(log, lines=lines, vendor_share=share, fault_lines=faults)
    text = log.read_text().splitlines()
    best, hits = float("inf"), 0
    for _ in range(repeat):
        gc.disable()  # as in the check
        t = time.process_time()
        hits = len(lib.classify_all(text))
        best = min(best, time.process_time() - t)
        gc.enable()
    per_line = time.process_time()
    reference = sum(lib.classify(line) is not None for line in text)
    per_line = time.process_time() - per_line
    if slurm_conf and node:
        state = work / f"state-{share:g}"
        argv = [sys.executable, "-m", "slurm_plugin", "health", "check", "--node", node, "--dry-run", "--no-tools",
                "--log", str(log), "--state-dir", str(state), "--slurm-conf", slurm_conf, "--json",
                *(["--site", site] if site else []), *(["--site-facts", site_facts] if site_facts else [])]
    else:
        argv = [sys.executable, "-m", "slurm_plugin", "health", "classify", str(log), "--json"]
    runs = [_child(argv) for _ in range(repeat)]
    if slurm_conf and node:
        for r in runs[1:]:
            r["note"] = "cursor at the end: nothing new to read"
    first = runs[0]
    return {"vendor_share": share, "lines": lines, "bytes": size, "hits": hits, "hits_per_line_path": reference,
            "library_load_cpu_s": round(load_cpu, 3), "classify_cpu_s": round(best, 3),
            "classify_per_line_cpu_s": round(per_line, 3), "program": " ".join(argv[1:3] + argv[3:5]),
            "runs": runs, "first_run_wall_s": first["wall_s"], "first_run_cpu_s": first["cpu_s"],
            "met_cpu": first["exit"] == 0 and first["cpu_s"] < TARGET_S}


@click.command("health")
@click.option("--lines", type=click.IntRange(1000, 10_000_000), default=100_000, show_default=True,
              help="Lines in the week of logs.")
@click.option("--share", "shares", type=click.FloatRange(0, 1), multiple=True, default=(0.0, 0.6), show_default=True,
              help="Part of the lines that name a vendor driver with signatures (repeatable).")
@click.option("--repeat", type=click.IntRange(1, 20), default=3, show_default=True)
@click.option("--slurm-conf", default=None, help="Time a real `health check --dry-run` on --node of this cluster.")
@click.option("--node", default=None, help="The node for --slurm-conf.")
@click.option("--site", default=None, help="Pass --site (and --site-facts) to the check, as the rendered "
                                           "HealthCheckProgram does.")
@click.option("--no-site-facts", is_flag=True, help="With --site: no --site-facts (each first run loads the site).")
@json_output_options
@handle_errors(RuntimeError, OSError)
def health_cmd(lines: int, shares: tuple[float, ...], repeat: int, slurm_conf: str | None, node: str | None,
               site: str | None, no_site_facts: bool, as_json: bool, output: Path | None) -> None:
    """CPU and wall time of the node health check on one week of logs (target < 2 s)."""
    from ..sim.run import provenance

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="hetsched-bench-health-") as tmp:
        facts = None
        if site and not no_site_facts:
            from ..health.site_facts import SITE_FACTS, facts_text
            from ..site import load_site

            facts = str(Path(tmp) / SITE_FACTS)
            Path(facts).write_text(facts_text(load_site(site), site))
        cases = [_case(s, lines, repeat, Path(tmp), slurm_conf, node, site, facts) for s in shares]
    host = {**provenance(), "nproc": os.cpu_count(), "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    cmd = f"hetsched bench health --lines {lines} " + " ".join(f"--share {s:g}" for s in shares) + \
        f" --repeat {repeat}" + (f" --slurm-conf CONF --node {node}" if slurm_conf else "") + \
        (f" --site {site}" if site else "") + (" --no-site-facts" if site and no_site_facts else "") + \
        " --output FILE"
    doc = {"target_s": TARGET_S, "cases": cases, "machine": host, "commit": host.get("git_commit", ""),
           "command": cmd, "site_facts": bool(facts),
           "cpu_note": f"CPU s = user + system of the check and its children (scontrol, squeue), at load average "
                       f"{load_before[0]:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: wall time "
                       "is meaningful only on a quiet machine"}
    deliver(doc, as_json, output, lambda: [click.echo(
        f"share {c['vendor_share']:g}: {c['lines']} lines, {c['hits']} hits; load {c['library_load_cpu_s']:.2f} s, "
        f"classify {c['classify_cpu_s']:.2f} s CPU; program {c['first_run_cpu_s']:.2f} s CPU, "
        f"{c['first_run_wall_s']:.2f} s wall at load {load_before[0]:.1f}") for c in cases])
