"""``hetsched accounting``: Slurm accounting (slurmdbd) set up from the site file."""

from __future__ import annotations

from pathlib import Path

import click

from ..conf.accounting import apply_site
from ..site import load_site, resolve_site_path
from ..slurm import SlurmClient, SlurmError
from .common import handle_errors


@click.group()
def accounting() -> None:
    """Slurm accounting (slurmdbd) from the site file: QOS tiers, class accounts, users."""


@accounting.command()
@click.option("--site", "site_name", help="Site name or file (default: the embedded demo site).")
@click.option("--user", "users", multiple=True, help="A user to give the default class's account (repeatable); "
              "the site's grants add their classes' accounts.")
@click.option("--dry-run", is_flag=True, help="Print the sacctmgr commands without running them.")
@click.option("--containers", "root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Apply to the container cluster at this root (through its ctl container) instead of the "
                   "cluster SLURM_CONF names.")
@handle_errors(SlurmError, RuntimeError, OSError)
def apply(site_name: str | None, users: tuple[str, ...], dry_run: bool, root: Path | None) -> None:
    """Make slurmdbd hold what the site file says: a QOS per QoS tier (priority, preemption, MaxWall, GrpTRES),
    an account per workload class (its tier the default QOS), users in their accounts. Idempotent: only the
    commands that change something run (printed one per line); nothing is removed."""
    site = load_site(resolve_site_path(site_name))
    if root:
        from ..cluster.containers import ContainerCluster

        cluster = ContainerCluster(root)
        client = cluster.client()
        users = (*cluster.state().get("users", []), *users)
    else:
        client = SlurmClient()
    cmds = apply_site(client, site, list(users), dry_run=dry_run)
    for cmd in cmds:
        click.echo("sacctmgr -i " + " ".join(cmd))
    click.echo(f"# {len(cmds)} change(s){' (dry run: nothing applied)' if dry_run else ''}"
               if cmds else "# nothing to change")
