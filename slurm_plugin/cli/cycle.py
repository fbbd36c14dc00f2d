"""``hetsched cycle``: the steering loop (rank -> pack -> reshape -> power), apart from the admission daemon.

It runs as its own process (``daemon/hetsched-cycle.service``): its work (Slurm commands, HiGHS, numpy) must
never compete with the admission daemon's sub-millisecond request path for the same interpreter.
"""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path

import click

from ..cycle import CycleConfig, CycleRunner
from ..site import load_site
from ..slurm import SlurmClient, SlurmError
from .common import handle_errors, scale_config, scale_options, stack

log = logging.getLogger(__name__)


_options = stack(
    click.argument("site", required=False),
    click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default="/var/lib/hetsched",
                 show_default=True, help="Journal and scale memory live here."),
    click.option("--model", type=click.Path(dir_okay=False), help="DQN ranking model (.npz); none: no ranking."),
    click.option("--no-pack", is_flag=True, help="Do not move flexible pending jobs."),
    click.option("--no-reshape", is_flag=True, help="Do not reshape partitions by calendar."),
    click.option("--no-power", is_flag=True, help="Do not power nodes up or down."),
    scale_options,
    click.option("--dry-run", is_flag=True, help="Decide and log, change nothing (shadow mode)."),
)


def _runner(site, state_dir, model, no_pack, no_reshape, no_power, dry_run, **knobs) -> CycleRunner:
    ranker = None
    client = SlurmClient()
    if model:
        from ..admission.trust import Accounting
        from ..rank.dqn.live import RankOptions, rank_pending, resolve_model

        loaded = resolve_model(model)  # once: a bad file is reported here, and the cycle runs without ranking
        options = RankOptions(accounting=Accounting.of_file(client.conf))  # which --qos/--account to believe
        if loaded is not None:
            def ranker(snapshot, site_model, now):
                return rank_pending(snapshot, loaded, site_model, now, options)

    config = CycleConfig(pack=not no_pack, reshape=not no_reshape, power=not no_power,
                         scale=scale_config(**knobs))
    state_dir.mkdir(parents=True, exist_ok=True)
    return CycleRunner(load_site(site), client, config, state_dir, ranker=ranker, dry_run=dry_run)


@click.group()
def cycle() -> None:
    """Steer the cluster: priority bands, job moves, partition reshaping, node power."""


@cycle.command()
@_options
@handle_errors(SlurmError)
def once(**kw) -> None:
    """Run one cycle and print every action with its reason."""
    decision, results = _runner(**kw).run_once()
    if not decision.actions:
        click.echo("nothing to change")
    for i, a in enumerate(decision.actions):
        status = "planned" if kw["dry_run"] else ("ok" if results[i].ok else f"FAILED: {results[i].error}")
        click.echo(f"[{status}] {a.kind}: {a.reason}")


@cycle.command()
@_options
@click.option("--interval", type=float, default=30.0, show_default=True, help="Seconds between cycles.")
def run(interval: float, **kw) -> None:
    """Run cycles every INTERVAL seconds until SIGTERM/SIGINT; a failed cycle is logged and the next one runs."""
    runner = _runner(**kw)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.is_set():
        try:
            runner.run_once()
        except (SlurmError, OSError) as err:
            log.error("cycle failed: %s", err)
        stop.wait(interval)
