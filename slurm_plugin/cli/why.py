"""``hetsched why``: why a job or a node is where it is - Slurm's view plus every reasoned action the suite took."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from ..decision import Journal
from ..slurm import SlurmClient, SlurmError
from .common import emit_json, handle_errors

DEFAULT_JOURNAL = "/var/lib/hetsched/journal.jsonl"
journal_option = click.option("--journal", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_JOURNAL,
                              show_default=True, envvar="HETSCHED_JOURNAL", help="The daemon's action journal.")


@click.group()
def why() -> None:
    """Explain where a job or node is and which of the suite's decisions put it there."""


def _when(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _show(slurm_view: dict[str, str], keys: tuple[str, ...], entries: list[dict], as_json: bool) -> None:
    if as_json:
        emit_json({"slurm": {k: slurm_view.get(k) for k in keys}, "decisions": entries})
        return
    for k in keys:
        if slurm_view.get(k):
            click.echo(f"{k:>16}: {slurm_view[k]}")
    click.echo(f"{'decisions':>16}: {len(entries) or 'none by hetsched'}")
    for e in entries:
        status = "ok" if e.get("ok") else f"FAILED ({e.get('error')})"
        click.echo(f"  {_when(e['t'])} {e['kind']}: {e.get('reason', '')} [{status}]")


@why.command("job")
@click.argument("job_id", type=int)
@journal_option
@click.option("--json", "as_json", is_flag=True)
@handle_errors(SlurmError)
def job_cmd(job_id: int, journal: Path, as_json: bool) -> None:
    """Why job JOB_ID has its partition, features, priority and nodes."""
    view = SlurmClient().show_job(job_id)
    keys = ("JobState", "Reason", "Partition", "Features", "Priority", "NodeList", "Comment")
    _show(view, keys, Journal(journal).about_job(job_id), as_json)


@why.command("node")
@click.argument("node")
@journal_option
@click.option("--json", "as_json", is_flag=True)
@handle_errors(SlurmError)
def node_cmd(node: str, journal: Path, as_json: bool) -> None:
    """Why NODE is up, down, drained or in its partitions."""
    view = SlurmClient().show_node(node)
    keys = ("State", "Reason", "Partitions", "AvailableFeatures", "Gres", "CPUAlloc")
    _show(view, keys, Journal(journal).about_node(node), as_json)
