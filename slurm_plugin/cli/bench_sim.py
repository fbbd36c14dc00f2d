"""``hetsched bench sim``: simulator speed per (workload, policy, backfill), beside the reference EASY loop."""

from __future__ import annotations

import os

import click

from .common import handle_errors
from .output import deliver, json_output_options


def _line(r: dict) -> str:
    s = (f"{r['workload']:34s} {r['policy']:12s} bf={'on ' if r['backfill'] else 'off'} {r['jobs']:7d} jobs "
         f"{r['sim_s']:7.2f} s {r['jobs_per_s']:9.0f} jobs/s (CPU {r['cpu_s']:.2f} s)")
    ref = r.get("reference")
    if ref:
        same = "same schedule" if ref["same_schedule"] else f"{ref['jobs_differ']} jobs start differently"
        s += (f" | reference {ref['sim_s']:.2f} s (CPU {ref['cpu_s']:.2f} s): engine x{ref['engine_speedup_wall']:.2f}"
              f" wall, x{ref['engine_speedup_cpu']:.2f} CPU, {same}")
    return s


@click.command("sim")
@click.option("--workload", "-w", "workloads", multiple=True,
              help="Workload (repeatable; default: the shared Lublin-1, KTH-SP2 and LANL-CM5 traces).")
@click.option("--site", default=None, help="Site for the workloads (default: the machine each trace names).")
@click.option("--on-site", "on_site", nargs=2, multiple=True, metavar="SITE WORKLOAD",
              help="Also WORKLOAD on SITE (repeatable), e.g. --on-site site_configs/large.yaml "
                   "synthetic:jobs=100000,seed=1 for the heterogeneous 2,240-node site's row.")
@click.option("--policies", default="fcfs,sjf,dqn", show_default=True, help="Comma-separated rankings.")
@click.option("--backfill", "bf", type=click.Choice(["both", "on", "off"]), default="on", show_default=True)
@click.option("--power", type=click.Choice(["always-on", "idle-suspend"]), default="always-on", show_default=True)
@click.option("--repeat", type=click.IntRange(1, 20), default=1, show_default=True, help="Runs each (fastest kept).")
@click.option("--reference", is_flag=True,
              help="Also run the reference FCFS+EASY loop (slurm_plugin/sim/reference.py) beside each FCFS+EASY "
                   "run on a one-group machine, and check both start every job at the same time.")
@json_output_options
@handle_errors(ValueError, OSError)
def sim_cmd(workloads, site, on_site, policies, bf, power, repeat, reference, as_json, output) -> None:
    """Jobs per second of simulation (the trace already read), fastest of --repeat runs. The result is
    ``{"rows": [{"workload", "policy", "backfill", "jobs", "sim_s", "jobs_per_s", ...}], "machine", "commit"}``."""
    from ..sim.bench import bench_sim, default_traces
    from ..sim.run import provenance
    ws = list(workloads) or ([] if on_site else default_traces())
    ws += [(site_, spec) for site_, spec in on_site]
    if not ws:
        raise click.UsageError("no workload given and the shared traces (../shared/workloads/swf) are absent")
    pols = [x.strip() for x in policies.split(",") if x.strip()]
    backfills = {"both": [False, True], "on": [True], "off": [False]}[bf]
    load0 = os.getloadavg()
    rows = bench_sim(ws, pols, backfills, site, power, repeat, reference,
                     log=None if as_json else lambda r: click.echo(_line(r)))
    prov = provenance()
    out = {"rows": rows, "machine": {k: prov[k] for k in ("uname_m", "nproc", "cpu_model", "python")},
           "commit": prov["git_commit"],
           # a shared host: the load says how far the wall times (sim_s) are from an idle machine's; cpu_s is
           # the simulating thread's CPU time (time.thread_time), which the load changes much less
           "load_avg_1m": {"start": load0[0], "end": os.getloadavg()[0]}, "cpu_clock": "time.thread_time"}
    deliver(out, as_json, output, lambda: None)
