"""A click group whose subcommands are imported only when one of them runs.

``hetsched --help`` and ``hetsched power resume`` then pay for click and the one command they use, not for
every group's imports (Pyomo, numpy, pydantic, ...). Subcommands are registered as ``name -> LazyCommand``;
the listing in ``--help`` uses the registered one-line help, which ``tests/unit/cli/test_lazy.py`` keeps equal
to the command's own.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import click


class LazyCommand(NamedTuple):  # a NamedTuple, not a dataclass: dataclasses imports inspect (~10 ms at start-up)
    """Where a subcommand lives: ``target`` is ``"module:attribute"`` (module relative to ``package``)."""

    target: str
    help: str  # the command's short help, shown by the parent's --help without importing it


def short_help(text: str, limit: int) -> str:
    """The short help click shows for a command whose help is ``text`` (its public API, not the deprecated
    ``click.utils.make_default_short_help``)."""
    return click.Command(None, help=text).get_short_help_str(limit)


class LazyGroup(click.Group):
    """A :class:`click.Group` that also takes ``lazy={name: LazyCommand}`` and imports each on first use."""

    def __init__(self, *args, lazy: dict[str, LazyCommand] | None = None, package: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})
        self.package = package

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(self.load(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def load(self, name: str) -> click.Command:
        """Import the registered command ``name`` (raises ImportError/AttributeError if the registry is wrong)."""
        module, _, attr = self.lazy[name].target.partition(":")
        cmd = getattr(importlib.import_module(module, self.package or None), attr)
        if not isinstance(cmd, click.Command):
            raise TypeError(f"{self.lazy[name].target} is {type(cmd).__name__}, not a click command")
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Like click's, but commands not yet imported are listed with their registered help."""
        names = [n for n in self.list_commands(ctx) if n in self.commands or n in self.lazy]
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            cmd = self.commands.get(name)
            if cmd is None:
                rows.append((name, short_help(self.lazy[name].help, limit)))
            elif not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)
