"""The CLI's conventions (README "CLI conventions"): explicit sites, Slurm-style tables, --json on stdout,
job ids in Slurm's notation, shell completion and man pages generated from the commands."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import click
import pytest
from click.testing import CliRunner

from slurm_plugin.cli import common, main
from slurm_plugin.cli.output import choose_fields, render_table
from slurm_plugin.cli.why import parse_job_ids

ROWS = [{"status": "ok", "kind": "power", "target": "POWER_DOWN n[1-2]"}, {"status": "failed", "kind": "move_job"}]


@pytest.fixture
def no_site(monkeypatch, tmp_path):
    """No $HETSCHED_SITE and no /etc/hetsched/site.yaml."""
    monkeypatch.delenv(common.SITE_ENV, raising=False)
    monkeypatch.setattr(common, "SYSTEM_SITE", tmp_path / "absent" / "site.yaml")
    return tmp_path


@pytest.mark.parametrize("argv", [["cycle", "once"], ["cycle", "run"], ["scale", "apply"], ["scale", "plan"],
                                  ["conf", "render", "-o", "OUT"], ["daemon", "run", "--socket", "S"]])
def test_production_commands_need_a_named_site(no_site, argv):
    argv = [str(no_site / a) if a in ("OUT", "S") else a for a in argv]
    res = CliRunner().invoke(main, argv)
    assert res.exit_code == common.EXIT_USAGE, res.output
    assert "no site given" in res.output
    for place in ("--site", "$HETSCHED_SITE", "/etc/hetsched/site.yaml") if argv[0] != "x" else ():
        assert place.replace("/etc/hetsched/site.yaml", str(common.SYSTEM_SITE)) in res.output


def test_site_resolution_order(no_site, monkeypatch):
    assert common.resolve_site("demo") == "demo"
    site_file = no_site / "site.yaml"
    site_file.write_text("x: 1\n")
    monkeypatch.setattr(common, "SYSTEM_SITE", site_file)
    assert common.resolve_site(None) == str(site_file)
    monkeypatch.setenv(common.SITE_ENV, "/srv/site.yaml")
    assert common.resolve_site(None) == "/srv/site.yaml"
    assert common.resolve_site("demo") == "demo"


def test_site_argument_and_option_must_agree(no_site):
    res = CliRunner().invoke(main, ["scale", "plan", "demo", "--site", "large"])
    assert res.exit_code == common.EXIT_USAGE and "disagree" in res.output


def test_render_names_the_demo_explicitly(no_site):
    res = CliRunner().invoke(main, ["conf", "render", "demo", "-o", str(no_site / "out")])
    assert res.exit_code == 0, res.output
    assert (no_site / "out" / "slurm.conf").exists()


def test_table_text_parsable_and_noheader():
    assert render_table(ROWS, ["status", "kind"]).splitlines() == ["STATUS KIND", "ok     power", "failed move_job"]
    assert render_table(ROWS, ["kind", "target"], parsable=True).splitlines() == [
        "KIND|TARGET", "power|POWER_DOWN n[1-2]", "move_job|"]
    assert render_table(ROWS, ["status"], noheader=True, parsable=True) == "ok\nfailed"


def test_format_fields_any_case_and_unknown_names_listed():
    assert choose_fields("Kind,STATUS", ["status", "kind"], ["status"]) == ["kind", "status"]
    assert choose_fields(None, ["status", "kind"], ["status"]) == ["status"]
    with pytest.raises(click.BadParameter, match="unknown field 'nope' .valid: status, kind"):
        choose_fields("nope", ["status", "kind"], ["status"])


def test_table_commands_take_h_as_noheader_and_keep_help():
    """`-h` is Slurm's --noheader on table commands; --help still shows help, and -h is help elsewhere."""
    runner = CliRunner()
    helped = runner.invoke(main, ["cycle", "once", "--help"])
    assert helped.exit_code == 0 and "-h, --noheader" in helped.output and "-o, --format" in helped.output
    assert "-h, --help" in runner.invoke(main, ["why", "job", "-h"]).output
    bad = runner.invoke(main, ["scale", "plan", "demo", "-o", "bogus", "-h"])
    assert bad.exit_code == common.EXIT_USAGE and "unknown field 'bogus'" in bad.output


def _commands():
    def walk(cmd, ctx):
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                yield from walk(sub, click.Context(sub, info_name=name, parent=ctx, **sub.context_settings))
        else:
            yield ctx.command_path, cmd

    return list(walk(main, click.Context(main, info_name="hetsched", **main.context_settings)))


def test_json_never_requires_a_value_and_never_swallows_an_argument():
    """--json alone always prints; where it may name a file (--json [FILE]) the command has no positional
    argument it could take by mistake."""
    optional = []
    for path, cmd in _commands():
        for p in cmd.params:
            if "--json" in getattr(p, "opts", ()):
                assert p.is_flag or p._flag_needs_value, f"{path}: --json requires a value"
                if not p.is_flag:
                    optional.append(path)
                    assert not any(isinstance(q, click.Argument) for q in cmd.params), path
    assert "hetsched cost compare" in optional and "hetsched bench sim" in optional  # the issues' spelling


@pytest.mark.parametrize("text,ids", [("4242_3", ["4242_3"]), ("4242", ["4242"]), ("123+1", ["123+1"]),
                                      ("7_[1-3,9]", ["7_1", "7_2", "7_3", "7_9"])])
def test_job_ids_in_slurm_notation(text, ids):
    assert parse_job_ids(text) == ids


@pytest.mark.parametrize("text", ["42_", "abc", "1_2_3", "4242 3", "5_[1-5000]", "-1"])
def test_bad_job_ids_are_usage_errors(text):
    with pytest.raises(click.BadParameter):
        parse_job_ids(text)


def test_why_job_rejects_a_bad_id_with_exit_2():
    res = CliRunner().invoke(main, ["why", "job", "42x"])
    assert res.exit_code == 2 and "not a job id" in res.output


def test_completion_script_for_bash():
    res = CliRunner().invoke(main, ["completion", "bash"])
    assert res.exit_code == 0 and "_HETSCHED_COMPLETE=bash_complete" in res.output
    assert "complete -o nosort -F _hetsched_completion hetsched" in res.output


def test_man_pages_are_generated_and_parse(tmp_path):
    res = CliRunner().invoke(main, ["man", str(tmp_path)])
    assert res.exit_code == 0, res.output
    pages = sorted(p.name for p in tmp_path.iterdir())
    assert "hetsched.1" in pages and "hetsched-cycle.1" in pages and "hetsched-why.1" in pages
    main_page = (tmp_path / "hetsched.1").read_text()
    assert main_page.startswith('.TH "HETSCHED" "1"') and ".SH EXIT STATUS" in main_page
    cycle_page = (tmp_path / "hetsched-cycle.1").read_text()
    assert ".SS hetsched cycle once" in cycle_page and "\\-\\-noheader" in cycle_page
    if shutil.which("groff"):
        for page in tmp_path.iterdir():
            check = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True)
            assert check.returncode == 0 and not check.stderr, (page.name, check.stderr)
        text = subprocess.run(["groff", "-man", "-Tutf8", str(tmp_path / "hetsched-cycle.1")], capture_output=True,
                              text=True).stdout
        assert "hetsched cycle once" in re.sub(".\b", "", text)  # without the bold overstrike


@pytest.mark.parametrize("how", ["--json FILE", "--output FILE"])
def test_json_file_writes_the_file_and_keeps_the_summary(tmp_path, how):
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["sim", "run", *how.replace("FILE", str(out)).split(), "--site", "demo",
                                    "-w", "synthetic:jobs=50,seed=1"])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["jobs"] == 50
    with pytest.raises(json.JSONDecodeError):
        json.loads(res.stdout)  # the text summary, not the JSON


def test_json_and_output_naming_different_files_is_a_usage_error(tmp_path):
    res = CliRunner().invoke(main, ["sim", "run", "--json", str(tmp_path / "a.json"), "--output",
                                    str(tmp_path / "b.json"), "--site", "demo", "-w", "synthetic:jobs=5,seed=1"])
    assert res.exit_code == 2 and "name different files" in res.output


def test_json_goes_to_stdout_and_output_to_a_file(tmp_path):
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["sim", "run", "--site", "demo", "-w", "synthetic:jobs=50,seed=1", "--json",
                                    "--output", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == json.loads(out.read_text())


@pytest.mark.parametrize("argv", [["scale", "apply", "demo", "--state", "{d}/scale-memory.json"],
                                  ["cycle", "once", "demo", "--state-dir", "{d}"],
                                  ["cycle", "run", "--site", "demo", "--state-dir", "{d}"]])
def test_a_second_writer_exits_3_before_touching_slurm(tmp_path, argv):
    """One lock per state directory for every writer (the live race is in tests/chaos/test_cycle.py)."""
    from slurm_plugin.fsio import exclusive_lock

    with exclusive_lock(tmp_path / "hetsched.lock"):
        res = CliRunner(env={"SLURM_CONF": str(tmp_path / "absent.conf")}).invoke(
            main, [a.format(d=tmp_path) for a in argv])
    assert res.exit_code == common.EXIT_LOCKED, res.output
    assert f"locked by process {os.getpid()}" in res.output and not (tmp_path / "journal.jsonl").exists()
