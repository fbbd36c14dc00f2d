"""``hetsched cluster``: the real local multi-node Slurm cluster."""

from __future__ import annotations

from pathlib import Path

import click

from ..cluster import deps
from ..cluster.local import DEFAULT_ROOT, ClusterError, LocalCluster
from ..slurm import SlurmError
from .common import emit_json, fail, handle_errors

root_option = click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_ROOT,
                           show_default=True, envvar="HETSCHED_CLUSTER", help="The cluster's state directory.")


@click.group()
def cluster() -> None:
    """Run a real Slurm cluster (slurmctld + one slurmd per node) on this host."""


@cluster.command("deps")
@click.option("--install", is_flag=True, help="apt-get install what is missing.")
def deps_cmd(install: bool) -> None:
    """List the Debian packages the local cluster needs; with --install, install the missing ones."""
    for req in deps.requirements():
        click.echo(f"{'ok     ' if req.present else 'MISSING'} {req.package:14} {req.why}")
    missing = deps.missing()
    if missing and install:
        deps.install([r.package for r in missing])
        still = deps.missing()
        if still:
            fail("still missing after install: " + ", ".join(r.package for r in still))
    elif missing:
        fail("missing packages; run `hetsched cluster deps --install`")


@cluster.command()
@click.argument("site", required=False)
@root_option
@click.option("--job-submit", is_flag=True, help="Load job_submit/job_submit.lua into slurmctld and start the admission daemon it asks.")
@click.option("--wait", type=float, default=90.0, show_default=True, help="Seconds to wait for the daemons.")
@handle_errors(ClusterError, SlurmError, OSError)
def up(site: str | None, root: Path, job_submit: bool, wait: float) -> None:
    """Start the local cluster for SITE (default: the embedded demo site). Harmless if already up."""
    state = LocalCluster(root).up(site, job_submit=job_submit, wait=wait)
    click.echo(f"cluster '{state['site_name']}' up at {root} (Slurm {state['slurm_version']}); "
               f"export SLURM_CONF={root}/etc/slurm.conf")


@cluster.command()
@root_option
@click.option("--json", "as_json", is_flag=True)
@handle_errors(ClusterError, SlurmError)
def status(root: Path, as_json: bool) -> None:
    """Show the cluster's processes and nodes; exit 1 if anything recorded is not running."""
    c = LocalCluster(root)
    procs = c.status()
    if not procs or not c.state():
        fail(f"no cluster at {root}")
    nodes = c.client().show_nodes() if procs[0].running else []
    if as_json:
        emit_json({"root": str(root), "processes": [p.__dict__ for p in procs],
                   "nodes": {n["NodeName"]: n.get("State") for n in nodes}})
    else:
        for p in procs:
            click.echo(f"{p.name:22} pid {p.pid or '-':>8}  {'running' if p.running else 'stopped'}")
        for n in nodes:
            click.echo(f"{n['NodeName']:12} {n.get('State', ''):24} {n.get('AvailableFeatures', '')}")
    if not procs[0].running:
        raise SystemExit(1)


@cluster.command()
@root_option
@handle_errors(ClusterError, SlurmError)
def down(root: Path) -> None:
    """Cancel jobs and stop every process the cluster started, by pid."""
    stopped = LocalCluster(root).down()
    click.echo("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))


@cluster.command()
@root_option
@click.option("--seconds", default=3, show_default=True, help="How long each demo job runs.")
@click.option("--json", "as_json", is_flag=True)
@handle_errors(ClusterError, SlurmError)
def demo(root: Path, seconds: int, as_json: bool) -> None:
    """Submit a mix of plain sbatch jobs to the running cluster and show where each one ran."""
    from ..cluster.demo import run_demo

    c = LocalCluster(root)
    rows = run_demo(c.client(), seconds=seconds, admission=bool(c.state().get("job_submit")))
    if as_json:
        emit_json([r.__dict__ for r in rows])
    else:
        click.echo(f"{'job':>5}  {'asked for':40} {'sbatch directives':42} {'state':10} {'partition':9} "
                   f"{'ran on':10} node features")
        for r in rows:
            click.echo(f"{r.job_id or '-':>5}  {r.what:40} {r.args:42} {r.state:10} {r.partition:9} {r.nodes:10} "
                       f"{r.features}")
    if any(r.state != "COMPLETED" for r in rows):
        raise SystemExit(1)
