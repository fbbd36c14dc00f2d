"""``hetsched conf``: validate a site and render its Slurm configs."""

from __future__ import annotations

from pathlib import Path

import click

from ..conf import DeployPaths, render_site, write_atomic
from ..site import load_site
from .common import emit_json, handle_errors


@click.group()
def conf() -> None:
    """Validate site files and generate slurm.conf / gres.conf from them."""


@conf.command()
@click.argument("site", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the parsed site as JSON.")
@handle_errors()
def check(site: str | None, as_json: bool) -> None:
    """Validate SITE (a path, or a bundled name such as 'demo'); exit 2 with every problem if invalid."""
    parsed = load_site(site)
    if as_json:
        emit_json(parsed.model_dump(mode="json"))
    else:
        groups = len(parsed.node_groups)
        click.echo(f"{parsed.name}: ok ({parsed.node_count()} nodes in {groups} node groups, "
                   f"{len(parsed.partitions)} partitions)")


@conf.command()
@click.argument("site", required=False)
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory to write slurm.conf, gres.conf and hetsched-shim.json into.")
@click.option("--socket", default=DeployPaths.daemon_socket, show_default=True, help="The daemon's socket.")
@click.option("--no-job-submit", is_flag=True, help="Leave JobSubmitPlugins=lua out of slurm.conf.")
@click.option("--dry-run", is_flag=True, help="Print what would be written; write nothing.")
@handle_errors(OSError)
def render(site: str | None, out_dir: Path, socket: str, no_job_submit: bool, dry_run: bool) -> None:
    """Render SITE's configs into OUTPUT atomically (a failed render leaves OUTPUT as it was)."""
    parsed = load_site(site)
    files = render_site(parsed, DeployPaths(daemon_socket=socket, job_submit=not no_job_submit))
    if dry_run:
        for name, text in files.items():
            click.echo(f"==> {out_dir / name} ({len(text.splitlines())} lines)")
            click.echo(text)
        return
    for path in write_atomic(out_dir, files):
        click.echo(f"wrote {path}")
