"""``hetsched sim``: simulate a workload on a site (or an SWF trace's own machine) under ranking policies."""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from pathlib import Path

import click

from ..workload import WorkloadError
from .common import handle_errors, stack
from .output import deliver, json_output_options
from .policyfile import load_policy_file, load_policy_files, policy_file_option, policy_files_option

log = logging.getLogger(__name__)
POLICIES = ("fcfs", "sjf", "wfp3", "unicep", "f1", "multifactor", "dqn")
PACKINGS = {None: (None,), "off": ("off",), "on": ("milp",), "both": ("off", "milp")}  # --packing -> hooks names


@click.group("sim")
def sim() -> None:
    """Discrete-event simulation of a Slurm cluster: baselines, metrics, plots."""


@contextmanager
def _progress(total: int, desc: str):
    """A tqdm bar on long runs (shown only on a terminal); yields the update callback or None."""
    if total < 20_000:
        yield None
        return
    from tqdm import tqdm
    with tqdm(total=total, desc=desc, unit="job", disable=None, leave=False) as bar:
        yield bar.update


_site = click.option("--site", default=None,
                     help="Site name or file (default: the machine the trace names: SWF header, OpenB node list).")
_workload = click.option("--workload", "-w", required=True,
                         help="SWF file, sacct --json / -P export, Philly .trace, OpenB pod list .csv, "
                              "or synthetic:jobs=N,seed=S,load=L.")
_semantics = click.option("--semantics", type=click.Choice(["slurm", "rlscheduler"]), default="slurm",
                          show_default=True, help="Slurm-like re-ranking at every event, or RLScheduler's.")
_power = click.option("--power", type=click.Choice(["always-on", "idle-suspend"]), default="always-on",
                      show_default=True, help="Scaling policy for node power.")
_suspend = click.option("--suspend-time", type=float, default=600.0, show_default=True,
                        help="Idle seconds before idle-suspend powers a node down.")
_drop = click.option("--drop-unfit", is_flag=True, help="Drop (and report) jobs bigger than the machine.")
_model = click.option("--model", "model_path", default=None, type=click.Path(exists=True, dir_okay=False),
                      callback=lambda ctx, param, v: _use_model(v), expose_value=False,
                      help="DQN model file for the 'dqn' policy (default: $HETSCHED_DQN_MODEL or the shipped one).")


def _use_model(path: str | None) -> None:
    """--model: the 'dqn' ranking factory reads the model path from $HETSCHED_DQN_MODEL (this process only)."""
    if path:
        import os
        from ..rank.dqn.policy import MODEL_ENV
        os.environ[MODEL_ENV] = path


_compress = click.option("--compress", type=float, default=1.0, show_default=True,
                         help="Divide submit times by this (run times kept): offered load x this.")
# what every simulation takes besides its policies: semantics, power, unfit jobs, compression, the DQN model
_sim_options = stack(_semantics, _power, _suspend, _drop, _compress, _model)


@sim.command("run")
@_site
@_workload
@click.option("--policy", "-p", type=click.Choice(POLICIES), default="fcfs", show_default=True)
@click.option("--backfill/--no-backfill", default=True, show_default=True, help="EASY backfill.")
@click.option("--sla", is_flag=True, help="Also per QoS tier the share of jobs started within its max_wait "
              "(the site's tiers; the rule of `hetsched sla report`).")
@_sim_options
@policy_file_option
@json_output_options
@handle_errors(WorkloadError, ValueError, OSError)
def run_cmd(site, workload, policy, backfill, sla, semantics, power, suspend_time, drop_unfit, compress, policy_file,
            as_json, output) -> None:
    """Simulate one policy; print (and optionally write) the result row. With --policy-file the ranking,
    packing and scaling come from the file (the policy `hetsched cycle --policy-file` runs live)."""
    from ..sim.run import prepare, provenance, simulate
    spec = load_policy_file(policy_file, ("policy", "power", "suspend_time", "semantics"))
    p = prepare(workload, site, drop_unfit, compress)
    if sla and p.site is None:
        raise ValueError("--sla needs a site (--site): the QoS tiers and their max_wait come from it")
    with _progress(len(p.workload.jobs), spec.ranking.name if spec else policy) as bar:
        if spec is not None:
            from ..sim.policy import simulate_policy
            row, _ = simulate_policy(p, spec, backfill, progress=bar, sla=sla)
        else:
            row, _ = simulate(p, policy, backfill, semantics, power, suspend_time, progress=bar, sla=sla)
    row["provenance"] = provenance()
    deliver(row, as_json, output, lambda: _key_values(row))


def _key_values(row: dict) -> None:
    """The result row as ``key: value`` lines (nested values as JSON)."""
    for key, value in row.items():
        text = json.dumps(value, sort_keys=True, default=float) if isinstance(value, (dict, list)) else value
        click.echo(f"{key:>24}: {text}")


@sim.command("compare")
@_site
@_workload
@click.option("--policies", default="fcfs,sjf,wfp3,unicep,f1,multifactor", show_default=True,
              help="Comma-separated rankings.")
@click.option("--backfill", "bf", type=click.Choice(["both", "on", "off"]), default="both", show_default=True)
@_sim_options
@json_output_options
@click.option("--plot", "plot_out", type=click.Path(dir_okay=False), help="PNG of queue/utilization/power.")
@click.option("--table", "table_out", type=click.Path(dir_okay=False), help="Markdown table here.")
@click.option("--packing", type=click.Choice(["off", "on", "both"]), default=None,
              help="Also run the daemon's packing step (MILP every 60 s) with 'on', Slurm's placement only with "
                   "'off', or both (the table then ends with on/off ratios); either turns on the site's speed "
                   "factors. Needs --site. Default: neither (no speed factors).")
@click.option("--jobs", "-j", "njobs", type=click.IntRange(1), default=None,
              help="Simulations at once, each in its own process (default: every core).")
@click.option("--slurm", "slurm_array", is_flag=True,
              help="Run the simulations as one Slurm job array on the cluster SLURM_CONF names (the work "
                   "directory, $HETSCHED_ARRAY_DIR or the temp dir, must be visible from its nodes).")
@policy_files_option
@handle_errors(WorkloadError, ValueError, OSError)
def compare_cmd(site, workload, policies, bf, semantics, power, suspend_time, drop_unfit, compress, as_json,
                output, plot_out, table_out, packing, njobs, slurm_array, policy_files) -> None:
    """Every policy with and/or without backfill (and packing): a table of policies x metrics, JSON rows, plots.
    With --policy-file F (repeatable) the rows are those files' policies instead, each built as `sim run
    --policy-file F` builds it."""
    from ..sim.compare import compare, table
    from ..sim.plots import plot_timelines
    from ..sim.run import prepare, provenance
    specs = load_policy_files(policy_files, ("policies", "power", "suspend_time", "semantics", "packing", "model_path"))
    pols = [x.strip() for x in policies.split(",") if x.strip()]
    bad = [x for x in pols if x not in POLICIES]
    if bad:
        raise click.BadParameter(f"unknown policy {bad[0]!r} (valid: {', '.join(POLICIES)})")
    backfills = {"both": [False, True], "on": [True], "off": [False]}[bf]
    p = prepare(workload, site, drop_unfit, compress)
    kw = dict(power=power, suspend_time_s=suspend_time) if semantics == "slurm" else {}
    log_row = lambda r: log.info("%s bf=%s %.2fs", r.get("policy_file") or r["policy"], r["backfill"],  # noqa: E731
                                 r["wall_s"])
    from ..sim.parallel import on_slurm
    from ..sim.slurm_array import ArrayOptions
    with on_slurm(ArrayOptions() if slurm_array else None):
        if specs:
            from ..sim.policy import compare_policies
            rows, timelines = compare_policies(p, specs, backfills, jobs=njobs, on_row=log_row)
        else:
            rows, timelines = compare(p, pols, backfills, semantics, on_row=log_row, packings=PACKINGS[packing],
                                      jobs=njobs, **kw)
    text = table(rows)
    if packing == "both":
        from ..sim.compare import packing_ratios
        text += "\n\n" + packing_ratios(rows)
    if table_out:
        Path(table_out).write_text(text + "\n")
    if plot_out and semantics == "slurm":
        plot_timelines(timelines, p.machine.cores, plot_out, f"{p.workload.name} on {p.machine.name}")
    deliver({"rows": rows, "provenance": provenance()}, as_json, output, lambda: click.echo(text))


@sim.command("rlrepro")
@click.option("--workload", "-w", required=True, help="lublin_256.swf (RLScheduler's Lublin-1).")
@json_output_options
@handle_errors(WorkloadError, ValueError, OSError)
def rlrepro_cmd(workload, as_json, output) -> None:
    """RLScheduler's Lublin-1 table under both semantics, next to the published figures."""
    import numpy as np

    from ..sim.rlrepro import PUBLISHED, reproduce
    from ..sim.run import prepare, provenance
    p = prepare(workload)
    rows = []
    for semantics in ("rlscheduler", "slurm"):
        for bf in (False, True):
            got = reproduce(p.machine, p.workload.jobs, list(PUBLISHED[bf]), bf, semantics=semantics)
            for pol, vals in got.items():
                pub = PUBLISHED[bf][pol]
                rows.append({"semantics": semantics, "backfill": bf, "policy": pol, "avg_bsld": float(np.mean(vals)),
                             "published": pub, "rel_diff": float(np.mean(vals) / pub - 1), "windows": vals})
    deliver({"rows": rows, "provenance": provenance()}, as_json, output, lambda: _rlrepro_table(rows))


def _rlrepro_table(rows: list[dict]) -> None:
    click.echo("| semantics | backfill | policy | avg bsld | published | diff |\n|---|---|---|---|---|---|")
    for r in rows:
        click.echo(f"| {r['semantics']} | {'yes' if r['backfill'] else 'no'} | {r['policy']} | {r['avg_bsld']:.2f} "
                   f"| {r['published']:.2f} | {100 * r['rel_diff']:+.1f}% |")


@sim.command("bench")
@json_output_options
@click.option("--quick", is_flag=True, help="Smaller sizes (for a smoke test).")
@handle_errors(WorkloadError, ValueError, OSError)
def bench_cmd(as_json, output, quick) -> None:
    """Speed: jobs/s of FCFS+EASY as the queue length and the node count grow."""
    from ..sim.bench import speed_scaling
    from ..sim.run import provenance
    rows = speed_scaling(quick=quick)
    deliver({"rows": rows, "provenance": provenance()}, as_json, output, lambda: _bench_table(rows))


def _bench_table(rows: list[dict]) -> None:
    click.echo("| scenario | nodes | jobs | mean queue | wall s | jobs/s |\n|---|---|---|---|---|---|")
    for r in rows:
        click.echo(f"| {r['scenario']} | {r['nodes']} | {r['jobs']} | {r['mean_queue']:.0f} | {r['wall_s']:.2f} "
                   f"| {r['jobs_per_s']:.0f} |")


def _fidelity():
    from .sim_fidelity import fidelity_cmd
    return fidelity_cmd


sim.add_command(_fidelity(), "fidelity")
