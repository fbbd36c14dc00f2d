"""The ``hetsched`` admin command. Each command group lives in its own module, registered in ``GROUPS``."""

from __future__ import annotations

import importlib
import logging

import click

from .. import __version__

# (module under slurm_plugin.cli, attribute): every command group, registered in one place.
GROUPS: list[tuple[str, str]] = [
    ("conf", "conf"),
    ("cluster", "cluster"),
    ("power", "power"),
    ("sim", "sim"),
    ("daemon", "daemon"),
    ("why", "why"),
    ("bench", "bench"),
    ("scale", "scale"),
    ("cycle", "cycle"),
    ("rank", "rank"),
]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="hetsched")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def main(verbose: int) -> None:
    """slurm-hetsched: one elastic Slurm pool out of ARM, x86 and accelerator nodes."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


for _module, _attr in GROUPS:
    main.add_command(getattr(importlib.import_module(f"{__name__}.{_module}"), _attr))
