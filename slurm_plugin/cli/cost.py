"""``hetsched cost``: what the pool costs and what it buys (capacity plan, Pareto front, reports, comparisons).

Each subcommand imports its solver/simulator only when it runs.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..site import SiteError
from ..slurm import SlurmError
from ..workload import WorkloadError
from .accounting import accounting_client, containers_root_option
from .common import emit_json, handle_errors
from .output import TABLE_CONTEXT, emit_table, json_output_options, table_options, write_json


@click.group()
def cost() -> None:
    """Cost and performance: hourly capacity plan, Pareto front, cost reports, scenario comparisons."""


def _instance(site_name: str | None, workload: str, horizon: str):
    from ..cost.plan_model import build_instance, parse_horizon
    from ..site import load_site, resolve_site_path
    from ..workload.loader import load_workload

    try:
        hours = parse_horizon(horizon)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--horizon") from None
    site = load_site(resolve_site_path(site_name))
    work = load_workload(workload, site)
    try:
        return build_instance(site, work.jobs, hours, name=f"{site.name}:{work.name}:{horizon}")
    except ValueError as err:
        raise click.UsageError(str(err)) from None


_SITE = click.option("--site", "site_name", help="Site name or file (default: the embedded demo).")


def _horizon(default: str):
    return click.option("--horizon", default=default, show_default=True,
                        help="Hours to plan from the first submit: Nd or Nh.")


def _time_limit(default: float):
    return click.option("--time-limit", type=click.FloatRange(0.1), default=default, show_default=True,
                        help="Seconds per MILP solve.")


_WORKLOAD = click.option("-w", "--workload", default="synthetic:jobs=2000,seed=1,load=0.8", show_default=True,
                         help="Work to plan for: a trace file or generator spec (as `hetsched sim run -w`).")


@cost.command()
@_SITE
@_WORKLOAD
@_horizon("7d")
@click.option("--max-loss", type=click.FloatRange(0, 0.99), default=0.05, show_default=True,
              help="Performance the chosen plan may lose against the performance-optimal plan (0.05 = 5 %).")
@_time_limit(120.0)
@click.option("--output", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the chosen plan as a site-file fragment (policy.calendars + plan.power) here.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary and the hourly plan as JSON.")
@handle_errors(SiteError, WorkloadError, RuntimeError, OSError)
def plan(site_name, workload, horizon, max_loss, time_limit, out, as_json) -> None:
    """Hourly capacity plan: which node groups are on each hour and where the work runs, the cheapest within
    --max-loss of the performance-optimal plan (time-of-use prices, burst nodes, QoS tiers, SLA penalties)."""
    from ..cost.plan import choose, plan_document
    from ..fsio import write_file_atomic

    inst = _instance(site_name, workload, horizon)
    choice = choose(inst, max_loss, time_limit_s=time_limit)
    doc = plan_document(inst, choice.chosen)
    summary = {"instance": inst.summary(), **choice.summary(inst)}
    if out:
        import yaml

        write_file_atomic(out, yaml.safe_dump(doc, sort_keys=False))
    if as_json:
        from ..sim.run import provenance
        emit_json({**summary, **doc, "provenance": provenance()})
        return
    s = summary
    click.echo(f"{inst.name}: {inst.hours} h, {len(inst.groups)} node groups, "
               f"{s['instance']['demand_node_hours']} node-hours of work")
    for label, key in (("performance-optimal", "performance_optimal"), ("chosen", "chosen")):
        p = s[key]
        click.echo(f"  {label:20s} cost {p['cost']:12.2f} {inst.currency}  performance {p['performance']:.4f}  "
                   f"node-hours on {p['node_hours_on']:.1f}")
    click.echo(f"  cost {s['cost_change_pct']:+.2f} % at {s['performance_loss_pct']:.2f} % performance loss")
    for g, name in enumerate(inst.groups):
        on = choice.chosen.on[g]
        click.echo(f"  {name:16s} on {int((on > 0).sum()):4d}/{inst.hours} h, mean {on.mean():.2f}/"
                   f"{inst.count[g]} nodes")
    if choice.attainable:
        click.echo(f"  QoS not attainable even with every node on (bounded by the best): {choice.attainable}")


@cost.command()
@_SITE
@_WORKLOAD
@_horizon("24h")
@click.option("--points", type=click.IntRange(2, 200), default=10, show_default=True,
              help="Epsilon-constraint points of the MILP front.")
@click.option("--pop", "pop_size", type=click.IntRange(4, 10000), default=60, show_default=True,
              help="NSGA-II population.")
@click.option("--seed", type=int, default=1, show_default=True)
@_time_limit(60.0)
@json_output_options
@handle_errors(SiteError, WorkloadError, RuntimeError, OSError)
def pareto(site_name, workload, horizon, points, pop_size, seed, time_limit, as_json, output) -> None:
    """Cost/performance Pareto front of the capacity plan: the epsilon-constraint MILP (HiGHS) and NSGA-II
    (pymoo, given the MILP's CPU time) side by side, with hypervolume and time. The JSON:
    {instance, pareto: [{method, hypervolume, points, wall_s, ...}]}."""
    from ..cost.pareto import compare

    from ..sim.run import provenance

    inst = _instance(site_name, workload, horizon)
    result = {**compare(inst, points=points, pop_size=pop_size, seed=seed, time_limit_s=time_limit),
              "provenance": provenance()}
    write_json(output, result)
    if as_json:
        emit_json(result)
        return
    click.echo(f"{inst.name}: {inst.hours} h, {len(inst.groups)} groups, {len(inst.classes)} classes")
    for p in result["pareto"]:
        click.echo(f"  {p['method']:6s} hypervolume {p['hypervolume']:.4f}  points {p['points']:3d}  "
                   f"wall {p['wall_s']:8.2f} s  cpu {p['cpu_s']:8.2f} s")


REPORT_FIELDS = ("account", "partition", "class", "jobs", "node_hours", "cost", "billed")
REPORT_SACCT_FIELDS = ("JobID", "Account", "Partition", "WCKey", "Comment", "NodeList", "AllocTRES", "ElapsedRaw")


def _group_by(ctx, param, value: str) -> tuple[str, ...]:
    keys = tuple(k.strip().lower() for k in value.split(",") if k.strip())
    bad = [k for k in keys if k not in REPORT_FIELDS[:3]] or ([] if keys else ["(none)"])
    if bad:
        raise click.BadParameter(f"{', '.join(bad)}: group by any of account, partition, class")
    return keys


@cost.command(context_settings=TABLE_CONTEXT)
@click.option("--site", "site_name", required=True, help="Site name or file: the node groups' cost_per_hour.")
@click.option("--sacct", "sacct_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="A `sacct -a -X -P -o " + ",".join(REPORT_SACCT_FIELDS) + "` export "
                   "(default: ask slurmdbd of the cluster SLURM_CONF names, or --containers).")
@click.option("--since", default="7d", show_default=True, help="Live: jobs from Nd, Nh, Nm before now or a date.")
@click.option("--until", "until", default="now", show_default=True, help="Live: ... until (same forms).")
@click.option("--by", "by", default="account", show_default=True, callback=_group_by,
              help="Group by a comma list of account, partition, class.")
@click.option("-w", "--workload", default=None,
              help="Price a simulation of this workload (a trace or generator spec, as `hetsched sim run -w`) "
                   "instead of accounting: accounts are user<N>, no billing TRES.")
@click.option("--scenario", default="suite", show_default=True,
              help="With -w: the `cost compare` scenario to simulate (static, slurm, suite, ...).")
@containers_root_option("Read")
@table_options(REPORT_FIELDS, ("account", "jobs", "node_hours", "cost", "billed"))
@handle_errors(SlurmError, SiteError, WorkloadError, OSError)
def report(site_name, sacct_file, since, until, by, workload, scenario, root, fields, noheader, parsable,
           as_json) -> None:
    """Cost per account, partition or workload class from Slurm accounting (or, with -w, from a simulation):
    ``cost`` prices each job on each of its nodes by that node's group (the largest share of its CPUs, memory
    or devices the job held, times the group's cost per hour), ``billed`` is Slurm's billing TRES (the rendered
    TRESBillingWeights; what `sreport` shows, in 1/1000 of the currency per hour), both in the site's currency.
    They differ where a partition mixes node groups of different prices (Slurm's weights are per partition)."""
    from ..cost.report import cost_report
    from ..cost.usage import live_usage, read_usage
    from ..site import load_site, resolve_site_path

    if workload and sacct_file:
        raise click.UsageError("give --sacct or -w/--workload, not both")
    site_path = resolve_site_path(site_name)
    if workload:
        site, uses = _simulated_uses(str(site_path), workload, scenario)  # the simulation loads the site
    elif sacct_file:
        site = load_site(site_path)
        uses = read_usage(sacct_file.read_text().splitlines(), site, str(sacct_file))
    else:
        site = load_site(site_path)
        try:
            uses = live_usage(accounting_client(root)[0], site, since, until)
        except ValueError as err:
            raise click.BadParameter(str(err)) from None
    rows = [{**dict(zip(by, r.key)), "jobs": r.jobs, "node_hours": round(r.node_hours, 3),
             "cost": round(r.cost, 4), "billed": None if r.billed is None else round(r.billed, 4)}
            for r in cost_report(site, uses, by)]
    if click.get_current_context().get_parameter_source("fields") is click.core.ParameterSource.DEFAULT:
        fields = [*by, *(f for f in fields if f in REPORT_FIELDS[3:])]  # the grouping keys, then the figures
    emit_table(rows, fields, noheader, parsable, as_json)


def _simulated_uses(site_path: str, workload: str, scenario: str) -> tuple:
    """(the site, the jobs of one simulated scenario of ``workload`` on it as usage records)."""
    from ..cost.compare import arms, simulate_arm
    from ..cost.sim_usage import simulated_usage
    from ..sim.run import prepare

    table = arms()
    if scenario not in table:
        raise click.BadParameter(f"'{scenario}' (valid: {', '.join(table)})", param_hint="--scenario")
    p = prepare(workload, site_path)
    _, _, engine = simulate_arm(p, table[scenario])
    return p.site, simulated_usage(p.site, p.machine, engine.jobs, engine.begin, engine.end, engine.job_nodes)


def _comparisons() -> None:
    """costsim's commands (compare, offpeak) live in cli/cost_compare.py."""
    from .cost_compare import compare_cmd, offpeak_cmd
    cost.add_command(compare_cmd, "compare")
    cost.add_command(offpeak_cmd, "offpeak")


_comparisons()
