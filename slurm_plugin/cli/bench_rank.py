"""``hetsched bench rank``: time the live ranker on a snapshot of 10,000 pending jobs (numpy inference)."""

from __future__ import annotations

import click

from .common import handle_errors
from .output import deliver, json_output_options


@click.command("rank")
@click.option("--jobs", type=click.IntRange(1), default=10_000, show_default=True, help="Pending jobs.")
@click.option("--repeat", type=click.IntRange(1, 100), default=7, show_default=True, help="Runs (median).")
@click.option("--model", "model_path", default=None, type=click.Path(dir_okay=False))
@json_output_options
@handle_errors(ValueError, OSError)
def rank_cmd(jobs, repeat, model_path, as_json, output) -> None:
    """Median ms of rank_pending (features + inference + band grouping) over --repeat runs."""
    from ..rank.dqn.bench import bench_rank
    from ..sim.run import provenance
    out = {**bench_rank(jobs, repeat, model_path), "provenance": provenance()}
    deliver(out, as_json, output, lambda: click.echo(
        f"ranked {out['jobs']} pending jobs in {out['rank_ms']:.2f} ms (median of {repeat}; "
               f"target <= 20 ms: {'met' if out['rank_ms'] <= 20 else 'MISSED'})"))
