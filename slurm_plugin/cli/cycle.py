"""``hetsched cycle``: the steering loop (rank -> pack -> reshape -> power), apart from the admission daemon.

It runs as its own process (``daemon/hetsched-cycle.service``): its work (Slurm commands, HiGHS, numpy) must
never compete with the admission daemon's sub-millisecond request path for the same interpreter.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path

import click

from ..cycle import CycleConfig, CycleRunner
from ..site import load_site
from ..slurm import SlurmClient, SlurmError
from . import actions
from .common import handle_errors, one_writer, scale_config, scale_options, site_arguments, site_from, stack
from .output import TABLE_CONTEXT

log = logging.getLogger(__name__)


_options = stack(
    site_arguments,
    click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default="/var/lib/hetsched",
                 show_default=True, help="Journal, scale memory, cycle state and the writer lock live here."),
    click.option("--model", type=click.Path(dir_okay=False), help="DQN ranking model (.npz); none: no ranking."),
    click.option("--no-pack", is_flag=True, help="Do not move flexible pending jobs."),
    click.option("--no-reshape", is_flag=True, help="Do not reshape partitions by calendar."),
    click.option("--no-power", is_flag=True, help="Do not power nodes up or down."),
    scale_options,
    click.option("--dry-run", is_flag=True, help="Decide and log, change nothing (shadow mode; takes no lock)."),
)


def _runner(site, site_option, state_dir, model, no_pack, no_reshape, no_power, dry_run, **knobs) -> CycleRunner:
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
    return CycleRunner(load_site(site_from(site, site_option)), client, config, state_dir, ranker=ranker,
                       dry_run=dry_run)


def _writer(state_dir: Path, dry_run: bool):
    """The state directory's lock (exit 3 if held), except in a dry run, which writes nothing."""
    import contextlib

    return contextlib.nullcontext() if dry_run else one_writer(state_dir)


@click.group()
def cycle() -> None:
    """Steer the cluster: priority bands, job moves, partition reshaping, node power."""


@cycle.command(context_settings=TABLE_CONTEXT)
@_options
@actions.action_table_options
@handle_errors(OSError)
def once(fields, noheader, parsable, as_json, **kw) -> None:
    """Run one cycle and print every action with its status and reason.

    Fields (-o): status (ok, partial, failed, not-attempted, planned), kind, target, reason, error, failed_ids,
    commands. Exit 0 if every action was applied, 1 if one failed, 3 if another cycle holds the lock, 4 if
    slurmctld did not answer."""
    with _writer(kw["state_dir"], kw["dry_run"]):
        runner = _runner(**kw)
        try:
            decision, results = runner.run_once()
        except SlurmError as err:
            actions.slurm_failure(err, runner.client)
    actions.show(decision, None if kw["dry_run"] else results, fields, noheader, parsable, as_json)
    sys.exit(0 if kw["dry_run"] else actions.exit_code(results))


@cycle.command()
@_options
@click.option("--interval", type=float, default=30.0, show_default=True, help="Seconds between cycles.")
@click.option("--max-backoff", type=float, default=600.0, show_default=True,
              help="Longest wait after failed cycles (the wait doubles with each failure in a row).")
@handle_errors(OSError)
def run(interval: float, max_backoff: float, **kw) -> None:
    """Run cycles every INTERVAL seconds until SIGTERM/SIGINT. A failed cycle (any error) is logged with its
    traceback and counted in cycle-state.json, and the loop backs off; it never exits because of one."""
    with _writer(kw["state_dir"], kw["dry_run"]):
        runner = _runner(**kw)
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        state = runner.run_forever(stop, interval, max_backoff)
    log.warning("cycle loop stopped after %d cycle(s), %d failed", state.cycles, state.failures)
