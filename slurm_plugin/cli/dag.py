"""Workflows as requirement graphs: check, plan, evaluate in the simulator, submit to Slurm."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from .common import EXIT_USAGE, fail, handle_errors
from .output import write_json


@click.group()
def dag() -> None:
    """Workflows as requirement graphs: split into parallel units, matched to node classes, run on Slurm."""


def _load(path: str):
    from ..dag.spec import WorkflowError, load_workflow

    try:
        return load_workflow(path)
    except WorkflowError as err:
        fail(str(err), EXIT_USAGE)


@dag.command("check")
@click.argument("workflow", type=click.Path(dir_okay=False))
def check(workflow: str) -> None:
    """Validate WORKFLOW (YAML); every problem as FILE:LINE: field.path: message (exit 2)."""
    wf = _load(workflow)
    click.echo(f"{workflow}: ok: workflow {wf.name}, {len(wf.tasks)} task(s)")


@dag.command("plan")
@click.argument("workflow", type=click.Path(dir_okay=False))
@click.option("--site", "site_name", default=None, help="Site file or bundled name (default: $HETSCHED_SITE).")
@click.option("--min-unit-s", type=click.FloatRange(min=0), default=None, help="Shortest unit element (s).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@handle_errors(ValueError)
def plan(workflow: str, site_name: str | None, min_unit_s: float | None, as_json: bool) -> None:
    """Decompose WORKFLOW into units, match them to node classes and print the sbatch requests (no Slurm)."""
    from ..dag.plan import plan_workflow, shell_line
    from ..dag.units import MIN_UNIT_S
    from ..site import load_site
    from .common import resolve_site

    wf = _load(workflow)
    site = load_site(resolve_site(site_name))
    p = plan_workflow(wf, site, min_unit_s=MIN_UNIT_S if min_unit_s is None else min_unit_s)
    if as_json:
        click.echo(json.dumps(p.as_dict(), indent=2))
        return
    click.echo(f"workflow {wf.name}: {len(wf.tasks)} task(s) -> {len(p.units)} unit(s); critical path "
               f"{p.length_s:.0f} s: {' -> '.join(p.critical_path)}; planned in {p.timings['total'] * 1000:.1f} ms CPU")
    for j in p.jobs:
        u = j.unit
        click.echo(f"  {u.name:<20} level {u.level} width {u.width:<5} slack {u.slack:>7.0f} s  {j.match.reason}")
        click.echo(f"    {shell_line(j)}")


def _stream(dags: str, site, count: int, load: float, seed: int):
    from ..dag import streams
    from ..dag.sim import capacity, machine_for

    cap = capacity(machine_for(site))
    if dags.startswith("pipelines"):
        if site is None:
            raise click.UsageError("the pipeline generator needs --site (GPU and ARM/x86 node classes)")
        return streams.pipeline_stream(count, cap, load, seed)
    path = Path(dags)
    if not path.is_file():
        raise click.BadParameter(f"no such file: {dags}", param_hint="--dags")
    if path.suffix in (".yaml", ".yml"):
        import numpy as np

        from ..dag.spec import WorkflowError, load_workflow
        try:
            wf = load_workflow(path)
        except WorkflowError as err:
            fail(str(err), EXIT_USAGE)
        rng = np.random.default_rng(seed)
        items = [(wf.model_copy(update={"name": f"{wf.name}-{k}"}),
                  {t.name: np.full(t.array, t.runtime_s) for t in wf.tasks}) for k in range(count)]
        return streams.poisson_stream(items, cap, load, rng)
    return streams.tpch_stream(path, count, cap, load, seed)


@dag.command("eval")
@click.option("--dags", required=True, help="Decima-format DAG file (.json/.json.gz), a workflow YAML (repeated), "
                                            "or 'pipelines' (render/ML generator; needs --site).")
@click.option("--site", "site_name", default=None,
              help="Site file or bundled name; default: a homogeneous 100-core machine (25 x 4 cores).")
@click.option("--load", type=click.FloatRange(min=0, min_open=True), default=0.8, show_default=True,
              help="Offered load of the busiest resource (cores or accelerators).")
@click.option("--count", type=click.IntRange(min=1), default=50, show_default=True, help="Workflows in the stream.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--launch-s", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Scheduling and launch cost of every Slurm job (s).")
@click.option("--min-unit-s", type=click.FloatRange(min=0), default=None, help="rrg: shortest unit element (s).")
@click.option("--policies", default="monolithic,naive,critical-path,rrg,rrg-sjf", show_default=True)
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the result JSON here.")
@handle_errors(ValueError)
def eval_(dags: str, site_name: str | None, load: float, count: int, seed: int, launch_s: float,
          min_unit_s: float | None, policies: str, json_out: Path | None) -> None:
    """Simulate a stream of DAG workflows (Poisson arrivals) under each policy; print and write the rows."""
    from ..dag.sim import POLICIES, evaluate
    from ..dag.units import MIN_UNIT_S
    from ..sim.run import provenance
    from ..site import load_site

    names = [p.strip() for p in policies.split(",") if p.strip()]
    bad = [p for p in names if p not in POLICIES]
    if bad:
        raise click.BadParameter(f"unknown {bad[0]!r} (valid: {', '.join(POLICIES)})", param_hint="--policies")
    site = load_site(site_name) if site_name else None
    arrivals = _stream(dags, site, count, load, seed)
    rows = []
    for name in names:
        t0 = time.process_time()
        row = evaluate(name, arrivals, site, launch_s, MIN_UNIT_S if min_unit_s is None else min_unit_s)
        row["cpu_s"] = time.process_time() - t0
        rows.append(row)
        click.echo(f"{name:<14} workflows {row['workflows']:>4}  jobs {row['jobs']:>7}  avg JCT "
                   f"{row['avg_jct_s']:>10.1f} s  avg wait {row['avg_wait_s']:>10.1f} s  makespan "
                   f"{row['makespan_s']:>10.1f} s  ({row['cpu_s']:.1f} CPU s)", err=json_out is None)
    doc = {"rows": rows, "dags": dags, "site": site.name if site else "tpch-100 (25 x 4 cores)", "load": load,
           "count": count, "seed": seed, "launch_s": launch_s,
           "min_unit_s": MIN_UNIT_S if min_unit_s is None else min_unit_s, "provenance": provenance()}
    write_json(json_out, doc)

