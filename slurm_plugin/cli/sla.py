"""``hetsched sla``: SLA attainment per QoS tier, measured from slurmdbd (sacct)."""

from __future__ import annotations

from pathlib import Path

import click

from ..slurm import SlurmError
from ..workload import WorkloadError
from .accounting import accounting_client, containers_root_option
from .common import handle_errors
from .output import TABLE_CONTEXT, emit_table, table_options

FIELDS = ("tier", "target_pct", "max_wait_s", "jobs", "decided", "met", "pending_late", "attainment_pct",
          "wait_p50_s", "wait_p90_s", "wait_p99_s", "wait_max_s", "verdict")
DEFAULT = ("tier", "target_pct", "jobs", "attainment_pct", "wait_p99_s", "verdict")


@click.group()
def sla() -> None:
    """SLA attainment per QoS tier (the site file's target_pct and max_wait) from Slurm accounting."""


@sla.command(context_settings=TABLE_CONTEXT)
@click.option("--site", "site_name", help="Site name or file (its policy.qos_tiers; default: the embedded demo).")
@click.option("--since", default="7d", show_default=True, help="Jobs submitted from: Nd, Nh, Nm before now, or "
              "YYYY-MM-DD[THH:MM[:SS]].")
@click.option("--until", "until", default="now", show_default=True, help="... until (same forms).")
@containers_root_option("Measure")
@table_options(FIELDS, DEFAULT)
@handle_errors(SlurmError, WorkloadError, RuntimeError, OSError)
def report(site_name: str | None, since: str, until: str, root: Path | None, fields, noheader, parsable,
           as_json) -> None:
    """Per QoS tier (a job's Slurm QOS): the share of its jobs that started within the tier's max_wait (jobs
    still pending past it count as missed), wait percentiles, and the verdict against target_pct. Exit 1 if a
    tier with a target missed it."""
    from ..site import load_site, resolve_site_path

    from ..sla import sla_rows
    from ..workload.slurmdbd import read_waits

    site = load_site(resolve_site_path(site_name))
    try:
        jobs, now = read_waits(accounting_client(root)[0], since, until)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None
    rows = sla_rows(jobs, site.policy.qos_tiers, now)
    emit_table([r.as_dict() for r in rows], fields, noheader, parsable, as_json)
    if any(r.verdict == "missed" for r in rows):
        raise SystemExit(1)
