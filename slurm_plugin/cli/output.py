"""One output convention for every command, after Slurm's own (README "CLI conventions").

- ``--json`` prints the result as JSON on stdout instead of the text. Commands whose result is a document
  (benchmarks, evaluations, ``sim``, ``cost``, ``tune``: :data:`json_output_options`) also take
  ``--json FILE``, which writes that JSON to FILE (atomically) and keeps the text summary on stdout;
  ``--output FILE`` is the same. A value after ``--json`` that starts with ``-`` is the next option, not a file.
- Table commands (like ``squeue``/``sinfo``) take ``-o/--format`` (a comma list of field names, any case),
  ``-h/--noheader`` and ``-p/--parsable`` (``|`` between fields, no padding); ``-h`` is therefore not help
  there (``--help`` is), as in Slurm: see :data:`TABLE_CONTEXT`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import click

from .common import emit_json, stack

# Table commands: `-h` is --noheader (Slurm's habit), so only `--help` shows help.
TABLE_CONTEXT = {"help_option_names": ["--help"]}

json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
output_option = click.option("--output", "output", type=click.Path(dir_okay=False, path_type=Path),
                             metavar="FILE", help="Also write the JSON result to FILE (atomically).")


def json_output_options(fn: Callable) -> Callable:
    """``--json [FILE]`` and ``--output FILE`` for a command that takes ``as_json`` (bool) and ``output``
    (Path or None): ``--json`` alone prints, ``--json FILE`` is ``--output FILE`` (the spelling the issues'
    commands use); both naming different files is a usage error."""

    @click.option("--json", "json_to", is_flag=False, flag_value="-", default=None, metavar="[FILE]",
                  help="Print the result as JSON on stdout; --json FILE writes it to FILE (atomically) instead.")
    @output_option
    @functools.wraps(fn)
    def command(*args, json_to: str | None = None, output: Path | None = None, **kwargs):
        if json_to not in (None, "-"):
            if output is not None and Path(json_to) != output:
                raise click.UsageError(f"--json {json_to} and --output {output} name different files")
            output = Path(json_to)
        return fn(*args, as_json=json_to == "-", output=output, **kwargs)

    return command



def table_options(available: Sequence[str], default: Sequence[str] | None = None) -> Callable:
    """``-o/--format`` (checked against ``available`` before the command runs; the command gets the list of
    field names), ``-h/--noheader``, ``-p/--parsable`` and ``--json``."""
    default = tuple(default or available)

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str]:
        return choose_fields(value, available, default)

    return stack(
        click.option("-o", "--format", "fields", metavar="FIELDS", callback=check,
                     help=f"Comma list of the fields to print, in order (any case): {', '.join(available)}. "
                          f"Default: {','.join(default)}."),
        click.option("-h", "--noheader", is_flag=True, help="No header line (Slurm's -h; help is --help)."),
        click.option("-p", "--parsable", is_flag=True, help="Fields separated by '|', no padding."),
        json_option,
    )


def write_json(path: Path | None, doc: object) -> None:
    """Write ``doc`` as indented JSON to ``path`` (atomic replace; parents created); nothing if ``path`` is None."""
    if path is None:
        return
    from ..fsio import write_file_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_file_atomic(path, json.dumps(doc, indent=2, sort_keys=True, default=_plain) + "\n")


def _plain(value: object) -> object:
    """JSON for numpy scalars and other numbers (float()), paths and the rest (str())."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)


def deliver(doc: object, as_json: bool, output: Path | None, text: Callable[[], None]) -> None:
    """The convention in one call: write ``doc`` to ``output`` if given, then print JSON or call ``text``."""
    write_json(output, doc)
    if as_json:
        emit_json(doc)
    else:
        text()


def choose_fields(spec: str | None, available: Sequence[str], default: Sequence[str]) -> list[str]:
    """The field names ``-o/--format`` asks for (case-insensitive), or ``default``; a usage error names the
    valid ones."""
    if not spec:
        return list(default)
    by_lower = {f.lower(): f for f in available}
    chosen = []
    for name in filter(None, (x.strip() for x in spec.split(","))):
        if name.lower() not in by_lower:
            raise click.BadParameter(f"unknown field {name!r} (valid: {', '.join(available)})",
                                     param_hint="'-o' / '--format'")
        chosen.append(by_lower[name.lower()])
    if not chosen:
        raise click.BadParameter("no field named", param_hint="'-o' / '--format'")
    return chosen


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (list, tuple)) for v in value):  # argv lists: commands, "; " apart
            return "; ".join(" ".join(map(str, v)) for v in value)
        return ",".join(map(_cell, value))
    if isinstance(value, dict):
        return ",".join(f"{k}:{v}" for k, v in value.items())
    return str(value)


def render_table(rows: Sequence[Mapping[str, object]], fields: Sequence[str], noheader: bool = False,
                 parsable: bool = False) -> str:
    """Rows as text: an upper-case header (unless ``noheader``), columns padded, or ``|``-joined if ``parsable``."""
    cells = [[_cell(r.get(f)) for f in fields] for r in rows]
    head = [] if noheader else [[f.upper() for f in fields]]
    if parsable:
        return "\n".join("|".join(line) for line in head + cells)
    widths = [max((len(line[i]) for line in head + cells), default=0) for i in range(len(fields))]
    return "\n".join(" ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in head + cells)


def emit_table(rows: Sequence[Mapping[str, object]], fields: Sequence[str], noheader: bool, parsable: bool,
               as_json: bool) -> None:
    """Print ``rows`` the way :func:`table_options` asked: JSON (every field of every row), or the columns
    ``fields``."""
    if as_json:
        emit_json(list(rows))
        return
    text = render_table(rows, fields, noheader, parsable)
    if text:
        click.echo(text)


def text_out(as_json: bool) -> Callable[..., None]:
    """``click.echo`` for a command's text: to stderr under ``--json``, so stdout carries only the JSON."""
    return lambda *args, **kw: click.echo(*args, **{**kw, "err": as_json or kw.get("err", False)})
