"""``hetsched scale``: plan (dry run) or apply the elastic power decisions for the live cluster."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ..scale.warm import DEFAULT_WAIT_PRICE_W
from ..slurm import SlurmClient, SlurmError
from . import actions
from .common import handle_errors, one_writer, scale_config, scale_options, site_arguments, site_from, stack
from .output import TABLE_CONTEXT, deliver, json_output_options
from .policyfile import load_policy_files, policy_files_option
from .why import journal_option

state_option = click.option("--state", type=click.Path(dir_okay=False, path_type=Path),
                            default="/var/lib/hetsched/scale-memory.json", show_default=True,
                            envvar="HETSCHED_SCALE_STATE", help="Where the planner keeps what it must remember.")


@click.group()
def scale() -> None:
    """Follow demand and the calendar: power nodes up/down, reshape partitions."""


def _plan(site: str, state: Path, **knobs):
    """This cycle's reshape + power decision through the cycle's own decide() (no ranking, no packing)."""
    from ..cycle.decide import CycleConfig, CycleMemory, decide
    from ..scale.memory_store import load_memory
    from ..site import load_site
    from ..snapshot import collect_snapshot

    config = CycleConfig(pack=False, scale=scale_config(**knobs))
    decision, memory = decide(collect_snapshot(SlurmClient()), load_site(site), config,
                              CycleMemory(load_memory(state)), time.time())
    return decision, memory.scale


_with_common = stack(site_arguments, state_option, scale_options)


@scale.command(context_settings=TABLE_CONTEXT)
@_with_common
@actions.action_table_options
@handle_errors(SlurmError)
def plan(site: str | None, site_option: str | None, state: Path, fields, noheader, parsable, as_json,
         **knobs) -> None:
    """Show what would be powered up/down and why (dry run: changes nothing, remembers nothing).

    Fields (-o): status, kind, cause, target, reason, error, failed_ids, commands."""
    decision, _ = _plan(site_from(site, site_option), state, **knobs)
    actions.show(decision, None, fields, noheader, parsable, as_json)


@scale.command(context_settings=TABLE_CONTEXT)
@_with_common
@journal_option
@actions.action_table_options
@handle_errors(SlurmError, OSError)
def apply(site: str | None, site_option: str | None, state: Path, journal: Path, fields, noheader, parsable,
          as_json, **knobs) -> None:
    """Plan and apply one cycle (holding the state directory's lock, like ``hetsched cycle``).

    Fields (-o) as in ``scale plan``. Exit 0 if every action was applied, 1 if one failed, 3 if another writer
    holds the lock, 4 if slurmctld stopped answering (the remaining actions are reported as not-attempted)."""
    from ..decision import Journal, SlurmApplier
    from ..scale.memory_store import save_memory

    site = site_from(site, site_option)
    with one_writer(state.parent):
        client = SlurmClient()
        try:
            decision, memory = _plan(site, state, **knobs)
        except SlurmError as err:
            actions.slurm_failure(err, client)
        results = SlurmApplier(client, Journal(journal)).apply(decision)
        if all(r.attempted for r in results):
            save_memory(state, memory)
    actions.show(decision, results, fields, noheader, parsable, as_json)
    sys.exit(actions.exit_code(results))


@scale.command("eval")
@click.option("--site", help="Site file or name (default: SWF traces run on their header's homogeneous machine).")
@click.option("--workload", "-w", required=True, help="SWF file, sacct export or synthetic:jobs=..,seed=..,load=..")
@click.option("--suspend-time", type=float, default=600.0, show_default=True,
              help="Slurm's SuspendTime for the idle-timer baseline.")
@click.option("--grace", type=float, default=120.0, show_default=True,
              help="hetsched's idle grace (s) when no --wait-price is used.")
@click.option("--wait-price", type=float, default=DEFAULT_WAIT_PRICE_W, show_default=True,
              help="Watts one second of job wait is worth (the break-even rule of scale/warm.py).")
@json_output_options
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path),
              help="PNG of power and queue length over time per policy.")
@click.option("--pid-plot", "pid_plot_path", type=click.Path(dir_okay=False, path_type=Path),
              help="PNG of the PID controller's step response and its diurnal run.")
@click.option("--jobs", "-j", "njobs", type=click.IntRange(1), default=None,
              help="Simulations at once, each in its own process (default: every core).")
@policy_files_option
@handle_errors(ValueError, OSError)
def eval_cmd(site: str | None, workload: str, suspend_time: float, grace: float, wait_price: float,
             as_json: bool, output: Path | None, plot_path: Path | None, pid_plot_path: Path | None,
             njobs: int | None, policy_files: tuple[str, ...]) -> None:
    """Energy and wait of always-on, Slurm's idle timer and hetsched in the simulator (same workload), and the
    PID controller's step response and stability measured in the simulator. Each --policy-file F adds a row,
    F's policy as `sim run --policy-file F` runs it (EASY backfill)."""
    from ..sim.scaling_eval import evaluate, pid_sim_step, policy_rows
    from ..sim.run import prepare, provenance

    specs = load_policy_files(policy_files, ())
    prepared = prepare(workload, site)
    rows, stability = evaluate(prepared, suspend_time_s=suspend_time, grace_s=grace, wait_price_w=wait_price,
                               jobs=njobs)
    rows += policy_rows(prepared, specs)
    base = rows[0]
    for r in rows:
        r["energy_vs_always_on"] = r["energy_kwh"] / base["energy_kwh"] - 1 if base["energy_kwh"] else None
        r["wait_vs_always_on"] = r["avg_wait_s"] / base["avg_wait_s"] - 1 if base["avg_wait_s"] else None
    step = pid_sim_step()
    if plot_path:
        _plot(rows, plot_path)
    if pid_plot_path:
        _plot_pid(step, stability, pid_plot_path)
    doc = {"workload": workload, "site": site, "machine": prepared.machine.name, "suspend_time_s": suspend_time,
           "grace_s": grace, "wait_price_w": wait_price,
           "rows": [{k: v for k, v in r.items() if k != "timeline"} for r in rows],
           "pid_step": {k: v for k, v in step.items() if k != "trajectory"},
           "pid_stability": {k: v for k, v in stability.items() if k != "trajectory"}, **provenance()}
    deliver(doc, as_json, output, lambda: _eval_text(rows, step, stability))


def _eval_text(rows: list[dict], step: dict, stability: dict) -> None:
    for r in rows:
        click.echo(f"{r['policy']:14} {r['energy_kwh']:10.1f} kWh ({100 * (r['energy_vs_always_on'] or 0):+6.1f} %)  "
                   f"avg wait {r['avg_wait_s']:8.1f} s ({100 * (r['wait_vs_always_on'] or 0):+6.1f} %)  "
                   f"utilization {r['utilization']:.3f}")
    click.echo(f"PID step (simulator): settles in {step['settle_periods']} periods, overshoot "
               f"{100 * step['overshoot']:.1f} % (down: {step['down_step']['settle_periods']} periods, "
               f"{100 * step['down_step']['overshoot']:.1f} %); diurnal: {stability['reversals_per_day']:.1f} "
               f"reversals/day (load itself {stability['reference_reversals_per_day']:.1f})")


def _plot_pid(step: dict, stability: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_s, ax_d) = plt.subplots(2, 1, figsize=(11, 6))
    for ax, tr, title in ((ax_s, step["trajectory"], f"step in the simulator ({step['plant']})"),
                          (ax_d, stability["trajectory"], "the PID policy over the workload (its first 9 days)")):
        t0 = tr["t"][0] if tr["t"] else 0.0
        n = sum(1 for x in tr["t"] if x <= t0 + 9 * 86400)
        t = [x / 3600 for x in tr["t"][:n]]
        ax.step(t, tr["powered"][:n], where="post", label="powered (on + booting)", lw=0.9)
        ax.step(t, tr["reference"][:n], where="post", label="busy / target (at most the group)", lw=0.9, ls="--")
        ax.step(t, tr["busy"][:n], where="post", label="busy", lw=0.6)
        ax.set_ylabel("nodes")
        ax.set_title(title, fontsize=9)
        ax.legend(loc="upper right", fontsize=8)
    ax_d.set_xlabel("hours")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_w, ax_q) = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    for r in rows:
        t = [x / 3600 for x in r["timeline"]["t"]]
        ax_w.plot(t, [w / 1000 for w in r["timeline"]["watts"]], label=r["policy"], lw=0.8)
        ax_q.plot(t, r["timeline"]["queue"], label=r["policy"], lw=0.8)
    ax_w.set_ylabel("power (kW)")
    ax_q.set_ylabel("pending jobs")
    ax_q.set_xlabel("hours")
    ax_w.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


from .rightsize import rightsize_cmd  # noqa: E402 - the command lives in its own module

scale.add_command(rightsize_cmd)
