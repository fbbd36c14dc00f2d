"""The lazily loaded command groups: every registration resolves, and help reads as if all were imported."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from slurm_plugin.cli import GROUPS, main
from slurm_plugin.cli.bench import BENCHMARKS, bench
from slurm_plugin.cli.lazy import LazyCommand, LazyGroup, short_help

REGISTRIES = [(main, name) for name in GROUPS] + [(bench, name) for name in BENCHMARKS]


@pytest.mark.parametrize(("group", "name"), REGISTRIES, ids=[f"{g.name}-{n}" for g, n in REGISTRIES])
def test_registered_help_is_the_commands_own(group, name):
    cmd = group.load(name)
    assert cmd.name == name
    for limit in (45, 200):
        assert short_help(group.lazy[name].help, limit) == cmd.get_short_help_str(limit), (
            f"{group.name} {name}: the help registered for it differs from its docstring's first sentence; "
            f"copy {cmd.get_short_help_str(1000)!r} into the registry")


def _help(group: click.Group, args: list[str]) -> str:
    result = CliRunner().invoke(group, args, prog_name="hetsched")
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(("group", "args"), [(main, ["--help"]), (main, ["bench", "--help"])])
def test_help_lists_commands_as_if_they_were_loaded(group, args):
    lazy = _help(group, args)
    loaded = click.Group(name=group.name, commands={n: group.load(n) for n in group.lazy}, params=group.params,
                         help=group.help, context_settings=group.context_settings)
    if args[0] == "bench":
        loaded = click.Group(name="main", commands={"bench": click.Group(
            name="bench", commands={n: bench.load(n) for n in bench.lazy}, help=bench.help)},
            params=main.params, help=main.help, context_settings=main.context_settings)
    assert lazy == _help(loaded, args)
    assert all(f"\n  {name} " in lazy for name in (bench.lazy if args[0] == "bench" else group.lazy))


def test_unknown_command_and_broken_registration():
    result = CliRunner().invoke(main, ["nosuch"])
    assert result.exit_code == 2 and "No such command 'nosuch'" in result.output
    broken = LazyGroup(name="g", lazy={"x": LazyCommand("slurm_plugin.cli.common:fail", "Not a command.")})
    with pytest.raises(TypeError, match="not a click command"):
        broken.load("x")
