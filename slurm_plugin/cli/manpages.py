"""Man pages in troff (man(7) macros) generated from the click commands themselves, so they never drift from
``--help``: ``hetsched.1`` for the command and its conventions, and ``hetsched-<group>.1`` per command group."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import click

EXIT_STATUS = (("0", "success"), ("1", "failure (e.g. an action failed; see the message)"),
               ("2", "bad usage or input (unknown option, invalid site file, no site given)"),
               ("3", "another hetsched cycle or scale apply holds the state directory's lock"),
               ("4", "slurmctld unreachable (remaining actions were not attempted)"))
ENVIRONMENT = (("HETSCHED_SITE", "the site file production commands run when none is named"),
               ("HETSCHED_JOURNAL", "the action journal hetsched why reads"),
               ("SLURM_CONF", "the slurm.conf of the cluster Slurm's commands talk to"))


def escape(text: str) -> str:
    """Text safe in a troff line: backslashes and hyphens escaped, no leading dot or quote."""
    out = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + out if out[:1] in (".", "'") else out


def _paragraphs(text: str) -> Iterator[str]:
    for para in (text or "").split("\n\n"):
        para = " ".join(line.strip() for line in para.strip().splitlines())
        if para:
            yield para


def _header(name: str, section: str, version: str) -> list[str]:
    date = dt.date.today().isoformat()
    return [f'.TH "{name.upper()}" "{section}" "{date}" "hetsched {version}" "hetsched manual"']


def _options(ctx: click.Context, command: click.Command) -> list[str]:
    out = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        out += [".TP", f"\\fB{escape(names)}\\fR", escape(help_text or "")]
    return out


def _context(cmd: click.Command, name: str, parent: click.Context | None = None) -> click.Context:
    """A context as click makes it for ``cmd`` (its own settings, e.g. help option names, applied)."""
    return click.Context(cmd, info_name=name, parent=parent, **cmd.context_settings)


def _subcommands(ctx: click.Context, group: click.Group) -> list[tuple[str, click.Command]]:
    """Groups first, then plain commands, each in name order."""
    found = [(name, group.get_command(ctx, name)) for name in group.list_commands(ctx)]
    found = [(n, c) for n, c in found if c is not None and not c.hidden]
    return sorted(found, key=lambda nc: (not isinstance(nc[1], click.Group), nc[0]))


def _command_section(parent: click.Context, name: str, cmd: click.Command) -> list[str]:
    ctx = _context(cmd, name, parent)
    lines = [".SS " + escape(ctx.command_path), f"\\fB{escape(ctx.command_path)}\\fR "
             + escape(" ".join(cmd.collect_usage_pieces(ctx))), ".PP"]
    for para in _paragraphs(cmd.help or ""):
        lines += [escape(para), ".PP"]
    opts = _options(ctx, cmd)
    if opts:
        lines += [".RS", *opts, ".RE"]
    return lines


def group_page(root: click.Group, name: str, version: str) -> str:
    """``hetsched-<name>.1``: every command of group ``name`` with its usage, help and options."""
    root_ctx = _context(root, "hetsched")
    group = root.get_command(root_ctx, name)
    ctx = _context(group, name, root_ctx)
    lines = _header(f"hetsched-{name}", "1", version)
    lines += [".SH NAME", escape(f"hetsched-{name} - {group.get_short_help_str(200)}"), ".SH SYNOPSIS",
              f"\\fBhetsched {escape(name)}\\fR COMMAND [OPTIONS] [ARGS]...", ".SH DESCRIPTION"]
    lines += [x for para in _paragraphs(group.help or "") for x in (escape(para), ".PP")]
    lines.append(".SH COMMANDS")
    for sub_name, sub in _subcommands(ctx, group):
        lines += _command_section(ctx, sub_name, sub)
    lines += [".SH SEE ALSO", "\\fBhetsched\\fR(1)", ""]
    return "\n".join(lines)


def main_page(root: click.Group, version: str, conventions: str) -> str:
    """``hetsched.1``: the global options, the command groups, the output conventions and the exit codes."""
    ctx = _context(root, "hetsched")
    groups = list(_subcommands(ctx, root))
    lines = _header("hetsched", "1", version)
    lines += [".SH NAME", escape("hetsched - " + root.get_short_help_str(200)), ".SH SYNOPSIS",
              "\\fBhetsched\\fR [OPTIONS] COMMAND [ARGS]...", ".SH DESCRIPTION"]
    lines += [x for para in _paragraphs(root.help or "") for x in (escape(para), ".PP")]
    lines += [".SH OPTIONS", *_options(ctx, root), ".SH COMMANDS"]
    for name, cmd in groups:
        if isinstance(cmd, click.Group):
            lines += [".TP", f"\\fB{escape(name)}\\fR", escape(cmd.get_short_help_str(200))
                      + f" See \\fBhetsched\\-{escape(name)}\\fR(1)."]
        else:
            lines += _command_section(ctx, name, cmd)
    lines.append(".SH OUTPUT CONVENTIONS")
    lines += [x for para in _paragraphs(conventions) for x in (escape(para), ".PP")]
    lines.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", escape(meaning)]
    lines.append(".SH ENVIRONMENT")
    for var, meaning in ENVIRONMENT:
        lines += [".TP", f"\\fB{var}\\fR", escape(meaning)]
    lines += [".SH FILES", ".TP", "\\fB/etc/hetsched/site.yaml\\fR", "the site, when none is named",
              ".TP", "\\fB/var/lib/hetsched/\\fR", escape("state: journal.jsonl (and its index and rotated files), "
                                                            "scale-memory.json, cycle-state.json, hetsched.lock")]
    lines += [".SH SEE ALSO", ", ".join(f"\\fBhetsched\\-{escape(n)}\\fR(1)" for n, c in groups
                                        if isinstance(c, click.Group))
              + ", \\fBslurm.conf\\fR(5), \\fBscontrol\\fR(1)", ""]
    return "\n".join(lines)


def all_pages(root: click.Group, version: str, conventions: str) -> dict[str, str]:
    """File name -> troff text for ``hetsched.1`` and one page per command group."""
    ctx = _context(root, "hetsched")
    pages = {"hetsched.1": main_page(root, version, conventions)}
    for name, cmd in _subcommands(ctx, root):
        if isinstance(cmd, click.Group):
            pages[f"hetsched-{name}.1"] = group_page(root, name, version)
    return pages
