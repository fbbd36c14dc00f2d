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

# key in the result -> what runs after the interpreter. The power path is measured through --help: it imports
# the power command, which is what every real power call pays before it reads the site or reaches a BMC.
MEASURED: dict[str, list[str]] = {
    "python_startup_ms": ["-c", "pass"],  # the bare interpreter, for scale
    "help_startup_ms": ["-m", "slurm_plugin", "--help"],
    "power_startup_ms": ["-m", "slurm_plugin", "power", "resume", "--help"],
    "power_group_startup_ms": ["-m", "slurm_plugin", "power", "--help"],
    "cycle_import_ms": ["-c", "import slurm_plugin.cycle.runner"],  # issue 20: the steering cycle's modules
    # the groups whose modules once imported the site model, the renderer or the server at import (issue 14):
    # their --help needs none of it (tests/unit/cli/test_startup.py holds every group to that)
    "cycle_help_startup_ms": ["-m", "slurm_plugin", "cycle", "--help"],
    "daemon_help_startup_ms": ["-m", "slurm_plugin", "daemon", "--help"],
    "status_help_startup_ms": ["-m", "slurm_plugin", "status", "--help"],
    "scale_help_startup_ms": ["-m", "slurm_plugin", "scale", "--help"],
}


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


def _env(tree: str | None) -> dict[str, str] | None:
    """This process's environment, or one whose PYTHONPATH starts with ``tree`` (a baseline's sources)."""
    if tree is None:
        return None
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))}


def measure(runs: int, warmup: int = 2, trees: dict[str, str | None] | None = None) -> dict[str, dict]:
    """``{tree label: {key: {"p50", "p95", "min", "cpu_p50", "runs"}}}`` in ms for every command in
    :data:`MEASURED`, run with each of ``trees`` first on PYTHONPATH (None: as this process runs; the default
    is ``{"current": None}``), every command and tree once per round.

    Raises RuntimeError if a command exits non-zero (a broken command would otherwise look fast)."""
    trees = trees or {"current": None}
    wall = {(t, k): [] for t in trees for k in MEASURED}
    cpu = {(t, k): [] for t in trees for k in MEASURED}
    for i in range(warmup + runs):
        for key, args in MEASURED.items():
            for label, tree in trees.items():
                argv = [sys.executable, *args]
                cpu0, t0 = _children_cpu_ms(), time.perf_counter()
                # cwd "/": `-m`/`-c` put the working directory first on sys.path, a checkout there would win
                done = subprocess.run(argv, env=_env(tree), cwd="/", stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
                elapsed, used = (time.perf_counter() - t0) * 1000, _children_cpu_ms() - cpu0
                if done.returncode != 0:
                    raise RuntimeError(f"{' '.join(argv)} ({label}) exited {done.returncode}: {done.stderr.strip()}")
                if i >= warmup:
                    wall[label, key].append(elapsed)
                    cpu[label, key].append(used)
    return {t: {k: {"p50": round(percentile(wall[t, k], 0.5), 1), "p95": round(percentile(wall[t, k], 0.95), 1),
                    "min": round(min(wall[t, k]), 1), "cpu_p50": round(percentile(cpu[t, k], 0.5), 1),
                    "runs": runs} for k in MEASURED} for t in trees}


@click.command("cli")
@click.option("--runs", type=click.IntRange(3, 1000), default=30, show_default=True, help="Fresh processes per command.")
@click.option("--baseline", type=click.Path(exists=True, file_okay=False), default=None,
              help="Also run every command with this source tree (holding slurm_plugin/) first on PYTHONPATH, "
                   "interleaved: e.g. an earlier version from `git archive REV slurm_plugin | tar -x -C DIR`.")
@json_output_options
@handle_errors(RuntimeError, OSError)
def cli_cmd(runs: int, baseline: str | None, as_json: bool, output: Path | None) -> None:
    """Start-up time of `hetsched --help` and `hetsched power resume --help` in fresh processes.

    Writes {"power_startup_ms": {"p50", "p95", "min", "cpu_p50", "runs"}, "help_startup_ms": {...},
    "power_group_startup_ms", "cycle_import_ms", "{cycle,daemon,status,scale}_help_startup_ms",
    "python_startup_ms" (the bare interpreter, for scale),
    "machine": ..., "commit": ..., "commands": ...}, and with --baseline the same figures of that tree under
    "baseline".
    """
    from ..sim.run import provenance

    load_before = os.getloadavg()
    trees = {"current": None, **({"baseline": str(Path(baseline).resolve())} if baseline else {})}
    figures = measure(runs, trees=trees)
    host = {**provenance(), "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    doc = {**figures["current"], "machine": host, "commit": host.get("git_commit", ""),
           "commands": {k: " ".join(["python", *a]) for k, a in MEASURED.items()}}
    if baseline:
        doc["baseline"] = {**figures["baseline"], "path": trees["baseline"]}
    deliver(doc, as_json, output, lambda: _text(figures))


def _text(figures: dict[str, dict]) -> None:
    for label, rows in figures.items():
        for key, fig in rows.items():
            click.echo(f"{label:<9} {key:<24} p50 {fig['p50']:7.1f} ms   p95 {fig['p95']:7.1f} ms   "
                       f"min {fig['min']:7.1f} ms   cpu p50 {fig['cpu_p50']:7.1f} ms")
    target = figures["current"]["power_startup_ms"]["p50"] < 150
    click.echo(f"power start-up median < 150 ms: {'met' if target else 'MISSED'}")
