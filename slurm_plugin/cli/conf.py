"""``hetsched conf``: validate a site, merge its Slurm config parts into a site's config, import real nodes."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from ..conf.paths import DeployPaths
from .common import EXIT_USAGE, emit_json, fail, handle_errors, resolve_site


@click.group()
def conf() -> None:
    """Validate site files and merge the suite's slurm.conf / gres.conf parts into a site's config."""


@conf.command()
@click.argument("site", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the parsed site as JSON.")
@handle_errors()
def check(site: str | None, as_json: bool) -> None:
    """Validate SITE (a path, or a bundled name such as 'demo'; default $HETSCHED_SITE, then
    /etc/hetsched/site.yaml); exit 2 with every problem if invalid."""
    from ..site import load_site

    parsed = load_site(resolve_site(site))
    if as_json:
        emit_json(parsed.model_dump(mode="json"))
    else:
        groups = len(parsed.node_groups)
        click.echo(f"{parsed.name}: ok ({parsed.node_count()} nodes in {groups} node groups, "
                   f"{len(parsed.partitions)} partitions)")


@conf.command()
@click.argument("site", required=False)
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The site's Slurm config directory (e.g. /etc/slurm).")
@click.option("--socket", default=DeployPaths.daemon_socket, show_default=True, help="The daemon's socket.")
@click.option("--no-job-submit", is_flag=True, help="Leave JobSubmitPlugins=lua and the shim out.")
@click.option("--power-log", default="/var/log/hetsched/power.log", show_default=True,
              help="Log file of the power programs (one line per call; its directory must be writable by SlurmUser).")
@click.option("--slurm-version", default=None, metavar="X.Y",
              help="oci.conf's syntax for this Slurm (a site with deploy.image_store; default: the installed slurmd's).")
@click.option("--diff", "show_diff", is_flag=True, help="Show a unified diff of what would change; write nothing.")
@handle_errors(OSError, ValueError)
def render(site: str | None, out_dir: Path, socket: str, no_job_submit: bool, power_log: str, slurm_version: str | None,
           show_diff: bool) -> None:
    """Merge SITE's parts into the Slurm config in OUTPUT, leaving the site's own settings alone.

    The parts (nodes, partitions, power saving, job_submit, gres.conf lines, the power programs; for a site
    that deploys, Prolog/Epilog and their programs, oci.conf and its run wrapper) are written
    as a new set in OUTPUT/hetsched.d/ and switched in atomically (OUTPUT/hetsched is a symlink to the current
    set); slurm.conf and gres.conf get one block of Include lines (a missing slurm.conf is created from the
    site file). A setting of the site's own that a part also sets is reported (file:line) and nothing is
    written; any file replaced is backed up first (NAME.hetsched-<time>.bak).
    """
    from ..site import load_site, resolve_site_path

    from ..conf.merge import MergeError, apply_merge, plan_merge, render_diff

    path = resolve_site_path(resolve_site(site))  # named ('demo' too), $HETSCHED_SITE or /etc/hetsched/site.yaml
    try:
        version = _version(slurm_version) if slurm_version else None
        plan = plan_merge(load_site(path), path, out_dir, socket, job_submit=not no_job_submit, power_log=power_log,
                          slurm_version=version)
    except MergeError as err:
        fail(str(err), EXIT_USAGE)
    if show_diff:
        click.echo(render_diff(plan) or f"no changes in {plan.out_dir}\n", nl=False)
        return
    changes = apply_merge(plan)
    for line in changes or [f"{plan.out_dir}: already up to date"]:
        click.echo(line)


def _version(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)\.(\d+)(\.\d+)?", text.strip())
    if not m:
        raise click.BadParameter(f"{text!r}: expected X.Y (e.g. 24.11)", param_hint="--slurm-version")
    return int(m[1]), int(m[2])


@conf.command("import-node")
@click.option("--site", "site_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Site file whose node group gets the real values.")
@click.option("--group", help="Node group to update (with --site).")
@click.option("--write", is_flag=True, help="Update the site file in place (atomically, after a backup).")
@handle_errors(OSError, ValueError)
def import_node(site_path: Path | None, group: str | None, write: bool) -> None:
    """Fill a node group's CPU, memory and GRES from `slurmd -C` output on stdin.

    Without --site, prints a node group to paste into a site file. With --site and --group, prints that
    group as it would become (--write updates the file; the old one is kept as SITE.hetsched-<time>.bak).
    """
    from ..conf.import_node import import_into_site, node_group_yaml, parse_slurmd_c

    node = parse_slurmd_c(sys.stdin.read())
    if site_path is None:
        click.echo(node_group_yaml(node), nl=False)
        return
    if not group:
        raise click.UsageError("--site needs --group (the node group to update)")
    text, changed = import_into_site(site_path, group, node, write=write)
    click.echo(text, nl=False)
    if write:
        click.echo(f"# {'updated' if changed else 'unchanged'}: {site_path}", err=True)
