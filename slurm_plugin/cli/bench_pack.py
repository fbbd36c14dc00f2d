"""``hetsched bench pack``: benchmark the packing MILP against greedy on generated instances."""

from __future__ import annotations

import logging
import shlex
import sys
from pathlib import Path

import click
from tqdm import tqdm

from ..pack import SOLVERS
from ..pack.bench import FULL_SIZES, QUICK_SIZES, Case, machine, run_case
from .common import emit_json
from .output import json_output_options, text_out, write_json

log = logging.getLogger(__name__)
_HEADER = (f"{'jobs':>6} {'cls':>4} {'shapes':>6} {'solver':<14} {'build_s':>8} {'model_s':>8} {'solve_s':>8} "
           f"{'objective':>12} "
           f"{'greedy':>12} {'gap':>7} {'gap_lp':>7} {'status':<9} target")


def _line(row: dict) -> str:
    target = row.get("target")
    verdict = "" if not target else ("met" if target["met"] else "MISSED")
    gap = "-" if row["gap"] is None else f"{100 * row['gap']:.2f}%"
    return (f"{row['jobs']:>6} {row['classes']:>4} {row['shapes']:>6} {row['solver']:<14} {row['build_s']:>8.3f} "
            f"{row['model_build_s']:>8.3f} {row['solve_s']:>8.3f} {row['objective']:>12.1f} "
            f"{row['greedy_objective']:>12.1f} {gap:>7} "
            f"{100 * row['gap_to_lp']:>6.2f}% {row['status']:<9} {verdict}")


def _command() -> str:
    """How this run was invoked, for the results file."""
    if "pack" in sys.argv:
        return "hetsched bench pack " + shlex.join(sys.argv[sys.argv.index("pack") + 1:])
    return shlex.join(sys.argv)


@click.command("pack")
@click.option("--quick", is_flag=True, help=f"Only {', '.join(f'{j}x{c}' for j, c in QUICK_SIZES)} (jobs x classes).")
@json_output_options
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the generated instances.")
@click.option("--seeds", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Instances per size, seeds SEED .. SEED+SEEDS-1.")
@click.option("--solver", type=click.Choice(sorted(SOLVERS)), default="highspy", show_default=True,
              help="Solver of the 'instances' rows.")
@click.option("--compare/--no-compare", default=True, show_default=True,
              help="Also run the other solvers on every instance (side by side, under 'solver_comparison').")
@click.option("--repeat", type=click.IntRange(1, 20), default=3, show_default=True, help="Runs per timing (median).")
def pack_cmd(quick: bool, as_json: bool, output: Path | None, seed: int, seeds: int, solver: str, compare: bool,
             repeat: int) -> None:
    """Build + solve time, objective vs greedy and gap of the packing MILP on 100 .. 10,000 jobs."""
    say = text_out(as_json)
    sizes = QUICK_SIZES if quick else FULL_SIZES
    others = [name for name in sorted(SOLVERS) if name != solver] if compare else []
    instances, comparison = [], []
    say(_HEADER)
    cases = [Case(jobs, classes, s) for jobs, classes in sizes for s in range(seed, seed + seeds)]
    for case in tqdm(cases, desc="pack bench", unit="instance", file=sys.stderr):
        row = run_case(case, SOLVERS[solver], repeat)
        instances.append(row)
        say(_line(row))
        for name in others:
            other = run_case(case, SOLVERS[name], repeat)
            comparison.append(other)
            say(_line(other))
    doc = {"instances": instances, "solver_comparison": comparison, "machine": machine(), "command": _command()}
    write_json(output, doc)
    if as_json:
        emit_json(doc)
    missed = [r for r in instances if r.get("target") and not r["target"]["met"]]
    below = [r for r in instances + comparison if r["objective"] < r["greedy_objective"]]
    say(f"targets missed: {len(missed)}; instances below greedy: {len(below)}")

