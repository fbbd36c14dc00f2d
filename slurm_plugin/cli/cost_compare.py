"""``hetsched cost compare``: static partitions vs Slurm's placement vs the whole suite, with ablations."""

from __future__ import annotations

import logging

import click

from ..workload import WorkloadError
from .common import handle_errors
from .output import deliver, json_output_options

log = logging.getLogger(__name__)


@click.command("compare")
@click.option("--site", required=True, help="Site name or file (partitions, speed factors, prices, power).")
@click.option("--workload", "-w", required=True, help="Any workload `hetsched sim` reads (synthetic:..., a Philly "
                                                       ".trace, an OpenB pod list, SWF, sacct).")
@json_output_options
@click.option("--plot", "plot_out", type=click.Path(dir_okay=False), help="PNG of the rows.")
@click.option("--scenarios", default=None,
              help="Comma-separated scenarios (default: static, slurm, suite and the suite-no-X ablations; also "
                   "het-unaware, het-packing, het-aware, het-aware-cost, het-route, het-route-cost, het-suite).")
@click.option("--learned", default="dqn", show_default=True,
              help="The suite's ranking (a `hetsched sim` ranking name; dqn = the shipped model).")
@click.option("--compress", type=float, default=1.0, show_default=True,
              help="Divide submit times by this (run times kept): offered load x this.")
@click.option("--drop-unfit", is_flag=True, help="Drop (and report) jobs bigger than the machine.")
@click.option("--jobs", "-j", "njobs", type=click.IntRange(1), default=1, show_default=True,
              help="Scenarios at once, each in its own process.")
@handle_errors(WorkloadError, ValueError, OSError)
def compare_cmd(site, workload, as_json, output, plot_out, scenarios, learned, compress, drop_unfit, njobs) -> None:
    """The same workload under static partitions (each job where its user pinned it, no power management),
    Slurm with the suite's generated config, and the whole suite (admission as the daemon decides, packing,
    learned ranking, power), plus the suite without each part. Prints a table; rows as in issue 18."""
    from ..cost.compare import compare_scenarios, headline, plot
    from ..sim.run import prepare, provenance
    p = prepare(workload, site, drop_unfit, compress)
    from ..cost.compare import SCENARIOS
    names = tuple(x.strip() for x in scenarios.split(",") if x.strip()) if scenarios else SCENARIOS
    rows = compare_scenarios(p, names, learned, njobs,
                             on_row=lambda r: log.info("%s %.1f CPU s", r["scenario"], r["cpu_s"]))
    doc = {"workload": p.workload.name, "site": p.site.name, "compress": compress, "jobs": len(p.workload.jobs),
           "dropped_unfit": len(p.workload.dropped), "skipped": p.workload.skipped, "rows": rows,
           "headline": headline(rows), "provenance": provenance()}
    if plot_out:
        plot(rows, plot_out, f"{p.workload.name} on {p.site.name}")
    deliver(doc, as_json, output, lambda: _compare_text(doc))


def _compare_text(doc: dict) -> None:
    from ..cost.compare import table
    click.echo(table(doc["rows"]))
    h = doc["headline"]
    if h:
        click.echo(f"static -> suite: utilization of powered cores {100 * h['static_utilization']:.1f} % -> "
                   f"{100 * h['suite_utilization']:.1f} % ({h['utilization_gain_points']:+.1f} points; anchor 40 -> "
                   f"65 %), average wait {100 * h['wait_change']:+.1f} % (anchor -37 %)")
        if "device_utilization_gain_points" in h:
            click.echo(f"static -> suite: utilization of powered devices {100 * h['static_utilization_devices']:.1f} % "
                       f"-> {100 * h['suite_utilization_devices']:.1f} % ({h['device_utilization_gain_points']:+.1f} "
                       f"points; of all devices {h['device_utilization_gain_points_all']:+.1f})")


@click.command("offpeak")
@click.option("--site", default="large", show_default=True, help="Site with regions in several time zones.")
@click.option("--nodes", type=click.IntRange(10), default=None,
              help="Scale every node group so the site has about this many nodes (default: as it is).")
@click.option("--workload", "-w", default="multiregion", show_default=True,
              help="multiregion:jobs=N,seed=S,days=D,load=L (per-region working hours; defaults 0 = as many as the load needs, 1, 7, 0.6).")
@click.option("--arms", default=None, help="Comma-separated arms (default: baseline, follow-the-sun, dev-shrink, "
                                            "weekend-lending, all).")
@json_output_options
@click.option("--plot", "plot_out", type=click.Path(dir_okay=False), help="PNG of the rows.")
@click.option("--jobs", "-j", "njobs", type=click.IntRange(1), default=1, show_default=True)
@handle_errors(WorkloadError, ValueError, OSError)
def offpeak_cmd(site, nodes, workload, arms, as_json, output, plot_out, njobs) -> None:
    """Off-peak planning as switchable policies (follow-the-sun, workday dev/test shrink, weekend GPU lending to
    rendering) on a multi-region diurnal workload: utilization, wait and cost of each against the baseline."""
    from ..cost.compare import plot
    from ..cost.offpeak import MultiRegionSpec, compare_offpeak, effects
    from ..site import load_site
    from ..sim.run import provenance
    s = load_site(site)
    if nodes:
        from ..snapshot.synthetic import scaled_site
        s = scaled_site(s, nodes)
    spec = MultiRegionSpec.parse(workload)
    from ..cost.offpeak import ARMS
    chosen = tuple(a.strip() for a in arms.split(",") if a.strip()) if arms else tuple(ARMS)
    rows = compare_offpeak(s, spec, chosen, njobs,
                           on_row=lambda r: log.info("%s %.1f CPU s", r["scenario"], r["cpu_s"]))
    doc = {"site": s.name, "nodes": s.node_count(), "workload": workload, "rows": rows, "effects": effects(rows),
           "provenance": provenance()}
    if plot_out:
        plot(rows, plot_out, f"off-peak policies, {workload} on {s.name} ({s.node_count()} nodes)")
    deliver(doc, as_json, output, lambda: _offpeak_text(doc))


def _offpeak_text(doc: dict) -> None:
    from ..cost.compare import table
    from ..cost.offpeak import wait_table
    click.echo(table(doc["rows"]))
    click.echo("\nMean / p95 wait (s) per baseline pool:")
    click.echo(wait_table(doc["rows"]))
    click.echo("\nMean / p95 wait (s) per kind of job:")
    click.echo(wait_table(doc["rows"], "wait_by_kind", "kind"))
    for e in doc["effects"]:
        click.echo(f"{e['scenario']}: utilization {e['utilization_points']:+.1f} points (powered "
                   f"{e['utilization_powered_points']:+.1f}), wait {100 * (e['wait_change'] or 0):+.1f} %, cost "
                   f"{100 * (e['cost_change'] or 0):+.1f} %")
