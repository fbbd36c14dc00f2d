"""``hetsched bench cli``: how long the ``hetsched`` command takes to start, in fresh processes.

slurmctld runs ``hetsched power resume|suspend`` on every power event, so the power command's start-up is part
of every node's resume time. Each round runs every measured command once (interleaved, so load changes on a
shared machine hit all of them alike). ``p50``/``p95``/``min`` are wall-clock milliseconds from ``fork`` to
exit; ``cpu_p50`` is the median user+system CPU of the process, which other load on the host inflates far less.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import click

from .common import handle_errors
from .output import deliver, json_output_options

# key in the result -> the command's arguments after `python -m slurm_plugin` (None: bare interpreter).
# The power path is measured through --help: it imports the power command and its backends' registry, which
# is what every real power call pays before it reaches a BMC, without touching one.
MEASURED: dict[str, list[str] | None] = {
    "python_startup_ms": None,
    "help_startup_ms": ["--help"],
    "power_startup_ms": ["power", "resume", "--help"],
    "power_group_startup_ms": ["power", "--help"],
}


def _argv(args: list[str] | None) -> list[str]:
    return [sys.executable, "-c", "pass"] if args is None else [sys.executable, "-m", "slurm_plugin", *args]


def percentile(values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) by linear interpolation between order statistics."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def measure(runs: int, warmup: int = 2) -> dict:
    """``{key: {"p50", "p95", "min", "cpu_p50", "runs"}}`` in ms for every command in :data:`MEASURED`.

    Raises RuntimeError if a command exits non-zero (a broken command would otherwise look fast)."""
    wall: dict[str, list[float]] = {k: [] for k in MEASURED}
    cpu: dict[str, list[float]] = {k: [] for k in MEASURED}
    for i in range(warmup + runs):
        for key, args in MEASURED.items():
            cpu0, t0 = _children_cpu_ms(), time.perf_counter()
            done = subprocess.run(_argv(args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            elapsed, used = (time.perf_counter() - t0) * 1000, _children_cpu_ms() - cpu0
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(_argv(args))} exited {done.returncode}: {done.stderr.strip()}")
            if i >= warmup:
                wall[key].append(elapsed)
                cpu[key].append(used)
    return {k: {"p50": round(percentile(v, 0.5), 1), "p95": round(percentile(v, 0.95), 1), "min": round(min(v), 1),
                "cpu_p50": round(percentile(cpu[k], 0.5), 1), "runs": len(v)} for k, v in wall.items()}


@click.command("cli")
@click.option("--runs", type=click.IntRange(3, 1000), default=30, show_default=True, help="Fresh processes per command.")
@json_output_options
@handle_errors(RuntimeError, OSError)
def cli_cmd(runs: int, as_json: bool, output: Path | None) -> None:
    """Start-up time of `hetsched --help` and `hetsched power resume --help` in fresh processes.

    Writes {"power_startup_ms": {"p50", "p95", ...}, "help_startup_ms": {...}, "python_startup_ms": {...}
    (the bare interpreter, `python -c pass`, for scale), "machine": ..., "commit": ..., "commands": ...}.
    """
    from ..sim.run import provenance

    load_before = os.getloadavg()
    figures = measure(runs)
    host = {**provenance(), "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    doc = {**figures, "machine": host, "commit": host.get("git_commit", ""),
           "commands": {k: " ".join(_argv(a)[1:]) if a is not None else "python -c pass" for k, a in MEASURED.items()}}
    deliver(doc, as_json, output, lambda: _text(figures))


def _text(figures: dict) -> None:
    for key, fig in figures.items():
        click.echo(f"{key:<24} p50 {fig['p50']:7.1f} ms   p95 {fig['p95']:7.1f} ms   min {fig['min']:7.1f} ms   "
                   f"cpu p50 {fig['cpu_p50']:7.1f} ms")
    target = figures["power_startup_ms"]["p50"] < 150
    click.echo(f"power start-up median < 150 ms: {'met' if target else 'MISSED'}")
