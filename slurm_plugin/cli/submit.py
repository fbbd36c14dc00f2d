"""``hetsched submit``: submit a batch script from a stated intent (the intent grammar, slurm_plugin.intent)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..site import SiteError
from ..slurm import SlurmError
from .common import EXIT_USAGE, emit_json, fail, handle_errors


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--intent", "text", required=True,
              help='What you want, e.g. "train on 4 GPUs, any type, finish by Friday 18:00, cheapest" '
                   '(grammar: docs/intent.md).')
@click.option("--site", "site_name", help="Site name or file (default: the embedded demo).")
@click.option("--plan", "plan_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Cost plan (`hetsched cost plan --output F`): refuse when it keeps the job's node groups off.")
@click.option("--dry-run", is_flag=True, help="Print the sbatch command, submit nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print what the intent became as JSON.")
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("sbatch_args", nargs=-1, type=click.UNPROCESSED)
@handle_errors(SiteError, SlurmError, OSError)
def submit(text, site_name, plan_file, dry_run, as_json, script, sbatch_args) -> None:
    """Submit SCRIPT with the sbatch options an intent derives (class, GPUs, types, array, begin, deadline,
    time limit, cost bound), checked against the site and the cost plan first; refused with the reason
    (exit 1) when it cannot be met, exit 2 on a parse error (the column is named)."""
    import shlex

    import yaml

    from ..intent.grammar import IntentSyntaxError, parse_intent
    from ..intent.resolve import IntentRefused, resolve
    from ..site import load_site, resolve_site_path

    site = load_site(resolve_site_path(site_name))
    plan = None
    if plan_file:
        doc = yaml.safe_load(plan_file.read_text())
        plan = (doc or {}).get("plan") if isinstance(doc, dict) else None
        if not isinstance(plan, dict) or "power" not in plan or "start" not in plan:
            fail(f"{plan_file}: not a cost plan (no plan.start / plan.power; write one with "
                 "`hetsched cost plan --output`)", EXIT_USAGE)
    try:
        derived = resolve(parse_intent(text), site, plan=plan)
    except IntentSyntaxError as err:
        fail(str(err), EXIT_USAGE)
    except IntentRefused as err:
        fail(f"intent refused: {err}")
    argv = [*derived.options, *sbatch_args]
    if as_json:
        emit_json({**derived.as_dict(), "sbatch": ["sbatch", *argv, str(script)]})
    elif dry_run:
        click.echo(shlex.join(["sbatch", *argv, str(script)]))
    if dry_run:
        return
    from ..slurm import SlurmClient

    job = SlurmClient().sbatch(*argv, str(script))
    if as_json:
        click.echo(json.dumps({"job_id": job}))
    else:
        click.echo(f"Submitted batch job {job} ({' '.join(derived.options)})")
