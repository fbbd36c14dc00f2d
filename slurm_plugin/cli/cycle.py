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
from typing import TYPE_CHECKING

import click

from ..slurm import SlurmClient, SlurmError
from . import actions
from .common import handle_errors, one_writer, scale_options, site_arguments, site_from, stack
from .output import TABLE_CONTEXT
from .policyfile import load_policy_file, policy_file_option

if TYPE_CHECKING:
    from ..cycle.runner import CycleRunner

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
    policy_file_option,
    click.option("--guard-margin", type=click.FloatRange(min=0), default=0.25, show_default=True,
                 help="Roll a tuned policy file back when its live objective is this much (relative) worse than its "
                      "twin predicted (README 'Live guard')."),
    click.option("--guard-min-jobs", type=click.IntRange(min=1), default=20, show_default=True,
                 help="Jobs since the policy went live before the guard judges it."),
    click.option("--dry-run", is_flag=True, help="Decide and log, change nothing (shadow mode; takes no lock)."),
    click.option("--queue-file", type=click.Path(dir_okay=False, path_type=Path),
                 help="Publish the job queue each cycle reads here, for the admission daemon's metrics "
                      "(hetsched.yaml queue_file): slurmctld then answers one full queue read per cycle, not two."),
)


def _flags_policy(model, no_pack, no_reshape, no_power, grace, warm, wait_price, arch, pid):
    """The policy the per-choice options name (what a policy file says otherwise)."""
    from ..policy import PackingSpec, PolicySpec, RankingSpec, ScalingSpec

    ranking = RankingSpec("dqn", model) if model else RankingSpec("multifactor", age_floor=False)
    scaling = ScalingSpec("always-on") if no_power else ScalingSpec(
        "planner", wait_price_w=wait_price if wait_price > 0 else None, warm_nodes=warm, grace_s=grace, arch=arch,
        pid=pid)
    return PolicySpec(ranking, PackingSpec(enabled=not no_pack), scaling, reshape=not no_reshape)


def _active_policy(policy_file: str | None, flags: tuple[str, ...], guard_margin: float, guard_min_jobs: int,
                   conf: str | None, groups: dict[str, int]):
    """The policy file the cycle follows: ``--policy-file``, else the site's (``$HETSCHED_POLICY_FILE`` or
    /etc/hetsched/policy.d/policy.yaml) unless per-choice options are given; None: the options' policy (no file).
    ``groups``: the site's node group -> size (its capacity plan is checked against them)."""
    from ..cycle.active import ActivePolicy
    from ..cycle.guard import GuardOptions
    from ..policy import PolicyError
    from ..decision.policy_file import site_policy_file

    if policy_file is not None:
        load_policy_file(policy_file, flags)  # refuses per-choice options beside it, names a bad field
    else:
        ctx = click.get_current_context()
        given = [n for n in flags if ctx.get_parameter_source(n) not in (click.core.ParameterSource.DEFAULT, None)]
        site_file = site_policy_file()
        if site_file is None or given:
            if site_file is not None:
                log.warning("per-choice options given: the site policy file %s is not used", site_file)
            return None
        policy_file = str(site_file)
    active = ActivePolicy(policy_file, GuardOptions(guard_margin, guard_min_jobs), conf, groups)
    try:
        active.refresh()  # a DQN model that cannot be loaded is reported here, once (the cycle runs unranked)
    except PolicyError as err:
        raise click.BadParameter(str(err), param_hint="--policy-file") from None
    return active


def _runner(site, site_option, state_dir, model, no_pack, no_reshape, no_power, dry_run, policy_file,
            guard_margin, guard_min_jobs, queue_file, **knobs) -> CycleRunner:
    from ..cycle import CycleRunner
    from ..cycle.policy import cycle_config, live_ranker
    from ..policy.capacity import group_sizes
    from ..site import load_site
    from ..snapshot.shared import QueueFile

    client = SlurmClient()
    site = load_site(site_from(site, site_option))
    flags = ("model", "no_pack", "no_reshape", "no_power", *knobs)
    active = _active_policy(policy_file, flags, guard_margin, guard_min_jobs, client.conf,
                            group_sizes(site.node_groups))
    if active is not None:
        config, ranker = active.refresh()
    else:
        spec = _flags_policy(model, no_pack, no_reshape, no_power, **knobs)
        # a DQN model that cannot be loaded is reported here, once, and the cycle runs without ranking
        config, ranker = cycle_config(spec), live_ranker(spec.ranking, client.conf)
    state_dir.mkdir(parents=True, exist_ok=True)
    return CycleRunner(site, client, config, state_dir, ranker=ranker, dry_run=dry_run, active=active,
                       queue_file=QueueFile(queue_file) if queue_file is not None else None)


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

    Fields (-o): status (ok, partial, deferred, failed, not-attempted, planned), kind, cause (BACKLOG, IDLE_GRACE,
    PACKING ...), target, reason, error, failed_ids, deferred_ids, commands. Exit 0 if every action was applied
    (or deferred by the policy's apply budget), 1 if one failed, 3 if another cycle holds the lock, 4 if
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
@click.option("--metrics-listen", default="127.0.0.1:9818", show_default=True,
              help="HOST:PORT of the cycle's Prometheus metrics (hetsched_cycle_*), or 'off'.")
@click.option("--metrics-textfile", type=click.Path(dir_okay=False),
              help="Also rewrite the metrics to this .prom file for node_exporter's textfile collector.")
@handle_errors(OSError)
def run(interval: float, max_backoff: float, metrics_listen: str, metrics_textfile: str | None, **kw) -> None:
    """Run cycles every INTERVAL seconds until SIGTERM/SIGINT. A failed cycle (any error) is logged with its
    traceback and counted in cycle-state.json, and the loop backs off; it never exits because of one."""
    from ..metrics import parse_listen

    try:
        parse_listen(metrics_listen)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--metrics-listen") from None
    with _writer(kw["state_dir"], kw["dry_run"]):
        runner = _runner(**kw)
        runner.metrics.serve(metrics_listen)
        runner.metrics.start_textfile(metrics_textfile, max(interval, 1.0))
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        try:
            state = runner.run_forever(stop, interval, max_backoff)
        finally:
            runner.metrics.close()
    log.warning("cycle loop stopped after %d cycle(s), %d failed", state.cycles, state.failures)
