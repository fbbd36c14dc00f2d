"""Workflows as requirement graphs: check, plan, evaluate in the simulator, submit to Slurm."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from .common import EXIT_USAGE, fail, handle_errors
from .output import write_json


@click.group()
def dag() -> None:
    """Workflows as requirement graphs: split into parallel units, matched to node classes, run on Slurm."""


def _load(path: str):
    from ..dag.files import load_workflow
    from ..dag.spec import WorkflowError

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
    from ..dag.plan import plan_workflow
    from ..dag.units import MIN_UNIT_S
    from ..site import load_site
    from .common import resolve_site

    wf = _load(workflow)
    site = load_site(resolve_site(site_name))
    _print_plan(plan_workflow(wf, site, min_unit_s=MIN_UNIT_S if min_unit_s is None else min_unit_s), as_json)


def _print_plan(p, as_json: bool) -> None:
    """The plan as ``dag plan`` and ``dag submit --dry-run`` print it: its form and why, then every job."""
    from ..dag.plan import shell_line

    if as_json:
        click.echo(json.dumps(p.as_dict(), indent=2))
        return
    wf = p.workflow
    click.echo(f"workflow {wf.name}: {len(wf.tasks)} task(s) -> {len(p.units)} job(s); critical path "
               f"{p.length_s:.0f} s: {' -> '.join(p.critical_path)}; planned in {p.timings['total'] * 1000:.1f} ms CPU")
    click.echo(f"  form: {p.form.reason}")
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

        from ..dag.files import load_workflow
        from ..dag.spec import WorkflowError
        try:
            wf = load_workflow(path)
        except WorkflowError as err:
            fail(str(err), EXIT_USAGE)
        rng = np.random.default_rng(seed)
        items = [(wf.model_copy(update={"name": f"{wf.name}-{k}"}),
                  {t.name: np.full(t.array, t.runtime_s) for t in wf.tasks}) for k in range(count)]
        return streams.poisson_stream(items, cap, load, rng)
    return streams.tpch_stream(path, count, cap, load, seed)


STREAM_KEYS = {"site": str, "load": float, "seed": int, "count": int, "launch_s": float}


def parse_stream(text: str, defaults: dict) -> dict:
    """``DAGS[:key=value,...]`` (keys site, load, seed, count, launch_s) -> one stream's settings over
    ``defaults``; a bad key or value is a click.BadParameter naming it."""
    dags, _, rest = text.partition(":") if not Path(text).exists() else (text, "", "")
    out = dict(defaults, dags=dags)
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key not in STREAM_KEYS:
            raise click.BadParameter(f"{text!r}: '{item}' is not key=value with key one of "
                                     f"{', '.join(STREAM_KEYS)}", param_hint="--stream")
        try:
            out[key] = STREAM_KEYS[key](value)
        except ValueError:
            raise click.BadParameter(f"{text!r}: {key}={value!r} is not a {STREAM_KEYS[key].__name__}",
                                     param_hint="--stream") from None
    return out


@dag.command("eval")
@click.option("--dags", default=None, help="Decima-format DAG file (.json/.json.gz), a workflow YAML (repeated), "
                                           "or 'pipelines' (render/ML generator; needs --site).")
@click.option("--stream", "stream_specs", multiple=True,
              help="One stream of several, side by side in one run: DAGS[:site=S,load=L,seed=N,count=N,launch_s=X] "
                   "(unset keys from the options). Repeatable; replaces --dags.")
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
@click.option("--output", "output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the result JSON here.")
@click.option("--json", "as_json", is_flag=True, help="Print the result JSON on stdout.")
@click.argument("output_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@handle_errors(ValueError)
def eval_(dags: str | None, stream_specs: tuple[str, ...], site_name: str | None, load: float, count: int,
          seed: int, launch_s: float, min_unit_s: float | None, policies: str, output: Path | None, as_json: bool,
          output_file: Path | None) -> None:
    """Simulate streams of DAG workflows (Poisson arrivals) under each policy; print and write the rows.

    One stream (--dags) or several side by side (--stream, repeated): every row names its stream. OUTPUT_FILE
    is --output given without the option name, so `dag eval ... --json F` prints the JSON and writes it to F."""
    json_out = output or output_file
    from ..dag.sim import POLICIES, evaluate
    from ..dag.units import MIN_UNIT_S
    from ..sim.run import provenance
    from ..site import load_site

    names = [p.strip() for p in policies.split(",") if p.strip()]
    bad = [p for p in names if p not in POLICIES]
    if bad:
        raise click.BadParameter(f"unknown {bad[0]!r} (valid: {', '.join(POLICIES)})", param_hint="--policies")
    if (dags is None) == (not stream_specs):
        raise click.UsageError("give --dags FILE or one or more --stream SPEC")
    defaults = {"site": site_name, "load": load, "seed": seed, "count": count, "launch_s": launch_s}
    specs = [parse_stream(t, defaults) for t in stream_specs] or [dict(defaults, dags=dags)]
    mu = MIN_UNIT_S if min_unit_s is None else min_unit_s
    rows, docs = [], []
    for spec in specs:
        site = load_site(spec["site"]) if spec["site"] else None
        label = (f"{Path(spec['dags']).name.split('.')[0]} {site.name if site else 'tpch-100'} load {spec['load']:g} "
                 f"seed {spec['seed']} ({spec['count']} wf{', launch %gs' % spec['launch_s'] if spec['launch_s'] != 1.0 else ''})")
        arrivals = _stream(spec["dags"], site, spec["count"], spec["load"], spec["seed"])
        for name in names:
            t0 = time.process_time()
            row = evaluate(name, arrivals, site, spec["launch_s"], mu)
            row["cpu_s"] = time.process_time() - t0
            row["stream"] = label
            rows.append(row)
            click.echo(f"{label:<42} {name:<14} workflows {row['workflows']:>4}  jobs {row['jobs']:>7}  avg JCT "
                       f"{row['avg_jct_s']:>10.1f} s  avg wait {row['avg_wait_s']:>10.1f} s  makespan "
                       f"{row['makespan_s']:>10.1f} s  ({row['cpu_s']:.1f} CPU s)", err=True)
        docs.append(dict(spec, label=label, site=site.name if site else "tpch-100 (25 x 4 cores)"))
    doc = {"rows": rows, "min_unit_s": mu, "provenance": provenance()}
    doc.update(docs[0] if len(docs) == 1 else {"streams": docs})
    write_json(json_out, doc)
    if as_json:
        click.echo(json.dumps(doc, indent=2, default=str))


state_option = click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                            help="Where submitted workflows are recorded (default: $HETSCHED_DAG_STATE, else "
                                 "/var/lib/hetsched/dag).")


def _client():
    from ..slurm import SlurmClient

    return SlurmClient()


def _apply(decision):
    from ..decision import Journal
    from ..decision.applier import SlurmApplier
    from .why import DEFAULT_JOURNAL

    path = Path(os.environ.get("HETSCHED_JOURNAL", DEFAULT_JOURNAL))
    journal = Journal(path) if path.parent.is_dir() else None
    return SlurmApplier(_client(), journal).apply(decision)


@dag.command("submit")
@click.argument("workflow", type=click.Path(dir_okay=False))
@click.option("--site", "site_name", default=None, help="Site file or bundled name (default: $HETSCHED_SITE).")
@click.option("--min-unit-s", type=click.FloatRange(min=0), default=None, help="Shortest unit element (s).")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the jobs write their output (default: the current directory).")
@state_option
@click.option("--dry-run", is_flag=True, help="Print the plan (its form and why, every sbatch), submit nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the record (with --dry-run: the plan) as JSON.")
@handle_errors(ValueError, KeyError)
def submit(workflow: str, site_name: str | None, min_unit_s: float | None, output_dir: Path | None,
           state_dir: Path | None, dry_run: bool, as_json: bool) -> None:
    """Submit WORKFLOW in the form the simulator's rrg would choose: one job holding its widest level, or one
    job array per unit with --dependency=afterok edges, critical units first in their band."""
    from ..dag import submit as sub
    from ..dag.plan import plan_workflow
    from ..dag.units import MIN_UNIT_S
    from ..site import load_site
    from ..slurm import SlurmError
    from .common import resolve_site

    wf = _load(workflow)
    site_ref = resolve_site(site_name)
    site = load_site(site_ref)
    mu = MIN_UNIT_S if min_unit_s is None else min_unit_s
    p = plan_workflow(wf, site, min_unit_s=mu)
    if dry_run:
        _print_plan(p, as_json)
        return
    client = _client()
    try:
        record = sub.submit_plan(p, client, sub.state_dir(state_dir), str(Path(site_ref).resolve())
                                 if Path(site_ref).exists() else site_ref, mu,
                                 output_dir=(output_dir or Path.cwd()).resolve())
        results = _apply(sub.priority_actions(record, client.site_factors(*record.job_ids)))
    except SlurmError as err:
        fail(f"submission failed, nothing left submitted: {err}")
    if as_json:
        click.echo(json.dumps(record.as_dict(), indent=2))
    else:
        click.echo(f"{record.dag_id}: {len(record.units)} job(s) submitted; form: {p.form.reason}")
        for u in record.units:
            click.echo(f"  {u.unit:<20} job {u.job_id:<8} {u.partition}/{u.features} width {u.width} level {u.level}"
                       f"{' critical' if u.critical else ''}")
    # a unit that already ended (a short first unit) needs no priority: only other failures count
    bad = [r.error for r in results if not r.ok and (not r.failed_ids or any(
        "already finished" not in why for why in r.failed_ids.values()))]
    if bad:
        fail("submitted, but setting the SiteFactor levels failed: " + "; ".join(bad))


def _job_states(client, ids) -> dict[int, dict]:
    """State, reason and nodes of each job Slurm still remembers (the first element's for an array)."""
    from ..slurm import SlurmError
    from ..slurm.client import parse_scontrol_oneliner

    out = {}
    for j in ids:
        try:
            lines = client.run("scontrol", "-o", "show", "job", str(j)).stdout.strip().splitlines()
        except SlurmError:
            continue
        recs = [parse_scontrol_oneliner(line) for line in lines if line.strip()]
        if recs:
            states = sorted({r.get("JobState", "?") for r in recs})
            out[j] = {"state": states[0] if len(states) == 1 else "+".join(states),
                      "reason": recs[0].get("Reason", ""), "nodes": ",".join(sorted({r.get("NodeList", "") for r in recs
                                                                                    if r.get("NodeList") not in ("", "(null)")})),
                      "partition": recs[0].get("Partition", ""), "features": recs[0].get("Features", "")}
    return out


@dag.command("status")
@click.argument("dag_id", required=False)
@state_option
@click.option("--json", "as_json", is_flag=True)
@handle_errors(KeyError)
def status(dag_id: str | None, state_dir: Path | None, as_json: bool) -> None:
    """Units of DAG_ID (default: every recorded workflow) with their jobs' states."""
    from ..dag import submit as sub

    where = sub.state_dir(state_dir)
    recs = [sub.load(dag_id, where)] if dag_id else sub.records(where)
    client = _client()
    doc = []
    for rec in recs:
        states = _job_states(client, rec.job_ids)
        units = [{"unit": u.unit, "job_id": u.job_id, "after": list(u.after), "critical": u.critical,
                  **states.get(u.job_id, {"state": "GONE (finished longer than MinJobAge ago, or unknown)"})}
                 for u in rec.units]
        doc.append({"dag_id": rec.dag_id, "units": units})
        if not as_json:
            click.echo(rec.dag_id)
            for u in units:
                click.echo(f"  {u['unit']:<20} job {u['job_id']:<8} {u['state']:<12} {u.get('reason', '')} "
                           f"{u.get('partition', '')} {u.get('nodes', '')}")
    if as_json:
        click.echo(json.dumps(doc, indent=2))


@dag.command("cancel")
@click.argument("dag_id")
@state_option
@handle_errors(KeyError)
def cancel(dag_id: str, state_dir: Path | None) -> None:
    """Cancel every job of DAG_ID (scancel)."""
    from ..dag import submit as sub

    rec = sub.load(dag_id, sub.state_dir(state_dir))
    _client().cancel(*rec.job_ids)
    click.echo(f"{dag_id}: cancelled job(s) {' '.join(map(str, rec.job_ids))}")


@dag.command("rematch")
@click.argument("dag_id", required=False)
@state_option
@click.option("--dry-run", is_flag=True, help="Print the moves, change nothing.")
@handle_errors(KeyError, ValueError)
def rematch_cmd(dag_id: str | None, state_dir: Path | None, dry_run: bool) -> None:
    """Move units of DAG_ID (default: all) that have not started and whose class is full to an alternative
    expected to finish them sooner (what the cycle's `dag` step does every cycle)."""
    from ..cycle.inputs import group_states
    from ..dag import submit as sub
    from ..site import load_site
    from ..snapshot.collect import collect_snapshot

    where = sub.state_dir(state_dir)
    recs = [sub.load(dag_id, where)] if dag_id else sub.records(where)
    client = _client()
    snap = collect_snapshot(client)
    live = sub.live_jobs(snap.jobs)
    for rec in recs:
        site = load_site(rec.site)
        decision = sub.rematch_actions(rec, sub.replan(rec, site), site, group_states(snap, site), live,
                                       sub.releases_of(snap, site))
        for a in decision.actions:
            click.echo(f"{rec.dag_id}: job {a.job_id} -> partition={a.partition} features={a.features}: {a.reason}")
        if dry_run or not decision.actions:
            continue
        results = _apply(decision)
        sub.save(sub.moved(rec, decision, results), where)
        if not all(r.ok for r in results):
            fail("; ".join(r.error for r in results if not r.ok))
