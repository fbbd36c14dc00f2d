"""``hetsched power``: what Slurm's ResumeProgram/SuspendProgram run."""

from __future__ import annotations

import logging

import click

from ..power import BACKENDS, make_backend
from .common import expand_hosts, fail

log = logging.getLogger(__name__)


@click.group()
def power() -> None:
    """Power nodes up/down through a backend (called by Slurm with a hostlist)."""


def _run(action: str, hosts: tuple[str, ...], backend: str, cluster: str | None, site: str | None) -> None:
    names = expand_hosts(hosts)
    try:
        be = make_backend(backend, cluster=cluster, site=site)
    except (ValueError, OSError) as err:
        fail(str(err), 2)
    result = getattr(be, action)(names)
    for host in result.done:
        click.echo(f"{action} {host}: ok")
    for host, why in result.failed.items():
        click.echo(f"{action} {host}: FAILED: {why}", err=True)
    if not result.ok:
        raise SystemExit(1)


_backend = click.option("--backend", type=click.Choice(sorted(BACKENDS)), default="local", show_default=True)
_cluster = click.option("--cluster", help="Local cluster root (local backend).")
_site = click.option("--site", help="Site file with the nodes' BMCs (redfish and ipmi backends).")


def _command(action: str, help_text: str) -> click.Command:
    @click.argument("hosts", nargs=-1, required=True)
    @_backend
    @_cluster
    @_site
    def cmd(hosts: tuple[str, ...], backend: str, cluster: str | None, site: str | None) -> None:
        _run(action, hosts, backend, cluster, site)

    cmd.__doc__ = help_text
    return power.command(action)(cmd)


resume = _command("resume", "Power up HOSTS (a Slurm hostlist).")
suspend = _command("suspend", "Power down HOSTS (a Slurm hostlist).")
