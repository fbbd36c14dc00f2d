"""``hetsched completion`` and ``hetsched man``: shell completion and man pages, both from the click commands."""

from __future__ import annotations

from pathlib import Path

import click

from .common import handle_errors

CONVENTIONS = (
    "--json prints the result as JSON on stdout (cycle once, scale plan/apply and power too); --output FILE writes "
    "it to FILE. Table commands (cycle once, scale plan, scale apply, cluster status, cluster demo) take -o/--format FIELDS (a comma list of "
    "field names), -h/--noheader and -p/--parsable ('|' between fields), as squeue and sinfo do; there -h is "
    "--noheader, and --help shows the help. Production commands (daemon run, cycle, scale apply, conf render) "
    "need a site: SITE or --site, $HETSCHED_SITE, or /etc/hetsched/site.yaml; the bundled example runs only "
    "when named (demo).")


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]), default="bash")
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL.

    The install puts the bash one in /etc/bash_completion.d/hetsched; try it with
    ``source <(hetsched completion bash)``."""
    from click.shell_completion import get_completion_class

    from . import main

    cls = get_completion_class(shell)
    click.echo(cls(main, {}, "hetsched", "_HETSCHED_COMPLETE").source())


@click.command("man")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@handle_errors(OSError)
def man(directory: Path) -> None:
    """Write the man pages (troff) into DIRECTORY.

    hetsched.1 and one hetsched-<group>.1 per command group, e.g. into /usr/local/share/man/man1; read one
    with ``man -l DIRECTORY/hetsched.1``."""
    from .. import __version__
    from ..fsio import write_atomic
    from . import main
    from .manpages import all_pages

    for path in write_atomic(directory, all_pages(main, __version__, CONVENTIONS)):
        click.echo(f"wrote {path}")
