"""``hetsched accounting``: Slurm accounting (slurmdbd) set up from the site file, and its history exported."""

from __future__ import annotations

from pathlib import Path

import click

from ..slurm import SlurmClient, SlurmError
from .common import handle_errors


@click.group()
def accounting() -> None:
    """Slurm accounting (slurmdbd) from the site file: QOS tiers, class accounts, users."""


def containers_root_option(what: str):
    return click.option("--containers", "root", type=click.Path(file_okay=False, path_type=Path), default=None,
                        help=f"{what} the container cluster at this root (through its ctl container) instead of "
                             "the cluster SLURM_CONF names.")


def accounting_client(root: Path | None) -> tuple[SlurmClient, list[str]]:
    """The Slurm client of the container cluster at ``root`` (and its users), else of $SLURM_CONF's cluster."""
    if root:
        from ..cluster.containers import ContainerCluster

        cluster = ContainerCluster(root)
        return cluster.client(), list(cluster.state().get("users", []))
    return SlurmClient(), []


@accounting.command()
@click.option("--site", "site_name", help="Site name or file (default: the embedded demo site).")
@click.option("--user", "users", multiple=True, help="A user to give the default class's account (repeatable); "
              "the site's grants add their classes' accounts.")
@click.option("--dry-run", is_flag=True, help="Print the sacctmgr commands without running them.")
@containers_root_option("Apply to")
@handle_errors(SlurmError, RuntimeError, OSError)
def apply(site_name: str | None, users: tuple[str, ...], dry_run: bool, root: Path | None) -> None:
    """Make slurmdbd hold what the site file says: a QOS per QoS tier (priority, preemption, MaxWall, GrpTRES),
    an account per workload class (its tier the default QOS), users in their accounts. Idempotent: only the
    commands that change something run (printed one per line); nothing is removed."""
    from ..conf.accounting import apply_site
    from ..site import load_site, resolve_site_path

    site = load_site(resolve_site_path(site_name))
    client, known = accounting_client(root)
    users = (*known, *users)
    cmds = apply_site(client, site, list(users), dry_run=dry_run)
    for cmd in cmds:
        click.echo("sacctmgr -i " + " ".join(cmd))
    click.echo(f"# {len(cmds)} change(s){' (dry run: nothing applied)' if dry_run else ''}"
               if cmds else "# nothing to change")


@accounting.command()
@click.option("--since", default="30d", show_default=True, help="Start of the window: Nd, Nh, Nm before now, or "
              "YYYY-MM-DD[THH:MM[:SS]].")
@click.option("--until", "until", default="now", show_default=True, help="End of the window (same forms).")
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The export file (sacct -P with its header; `hetsched tune --history FILE` replays it).")
@containers_root_option("Export from")
@handle_errors(SlurmError, RuntimeError, OSError)
def export(since: str, until: str, out: Path, root: Path | None) -> None:
    """Write slurmdbd's job history (sacct -a -X -P: what the twin, right-sizing and `sla report` read) for a
    window into a file, atomically; then `hetsched tune --history FILE` tunes the site on it."""
    from ..workload.slurmdbd import export_history

    try:
        n = export_history(accounting_client(root)[0], out, since, until)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None
    click.echo(f"{out}: {n} job(s) from slurmdbd ({since} .. {until})")


@accounting.command()
@click.argument("name")
@click.argument("clusters", nargs=-1, required=True)
@click.option("--dry-run", is_flag=True, help="Print the sacctmgr command without running it.")
@containers_root_option("Federate through")
@handle_errors(SlurmError, RuntimeError, OSError, ValueError)
def federate(name: str, clusters: tuple[str, ...], dry_run: bool, root: Path | None) -> None:
    """Make NAME a Slurm federation of CLUSTERS (each registered with the same slurmdbd, e.g. container
    clusters brought up with `cluster up --containers --member-of ROOT`). Idempotent: a cluster of another
    federation is refused."""
    from ..conf.accounting import federate as make_federation

    cmds = make_federation(accounting_client(root)[0], name, list(clusters), dry_run=dry_run)
    for cmd in cmds:
        click.echo("sacctmgr -i " + " ".join(cmd))
    click.echo(f"# {len(cmds)} change(s){' (dry run: nothing applied)' if dry_run else ''}"
               if cmds else "# nothing to change")
