"""``hetsched bench cycle``: CPU time of the cycle's pure part (parse + every step of decide) at site scale."""

from __future__ import annotations

from pathlib import Path

import click

from .common import handle_errors
from .output import deliver, json_output_options
from .policyfile import load_policy_file, policy_file_option

DEFAULT_POLICY = {"ranking": {"name": "dqn"}, "packing": {"enabled": True}, "scaling": {"name": "planner"}}


def _ints(ctx, param, value: str) -> list[int]:
    try:
        out = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated whole numbers, got {value!r}") from None
    if not out or min(out) < 1:
        raise click.BadParameter(f"expected numbers >= 1, got {value!r}")
    return out


@click.command("cycle")
@click.option("--site", "site_name", default="large", show_default=True, help="Site file or bundled name to grow.")
@click.option("--nodes", default="2240", show_default=True, callback=_ints, help="Node counts, comma-separated.")
@click.option("--pending", default="1000,10000,100000", show_default=True, callback=_ints,
              help="Pending-queue sizes, comma-separated.")
@click.option("--format", "formats", type=click.Choice(["22.05", "24.11"]), multiple=True,
              default=("22.05", "24.11"), show_default=True, help="Slurm JSON layout of the synthetic outputs.")
@click.option("--repeat", type=click.IntRange(1, 20), default=3, show_default=True, help="Runs per point (fastest).")
@click.option("--live", is_flag=True, help="Measure on the running local cluster at --root instead: snapshot "
              "reads, pure decide, whole `cycle once` runs and slurmctld's RPC cost (sdiag).")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="With --live: the cluster's state directory (e.g. `cluster up large --powered-down`).")
@click.option("--fill", type=click.IntRange(0), default=0, show_default=True, metavar="M",
              help="With --live: first submit held jobs until M are pending (job arrays split into records).")
@click.option("--unheld", is_flag=True, help="With --fill: submit jobs that are not held, into partitions set DOWN "
              "first (pending on PartitionDown: nothing starts, but the cycle ranks, packs and plans for them).")
@click.option("--cycles", type=click.IntRange(1, 10), default=2, show_default=True,
              help="With --live: `cycle once` runs (the first sets every band, later ones the steady state).")
@click.option("--interval", type=click.FloatRange(min=1), default=30.0, show_default=True,
              help="With --live: the cycle interval the RPC cost is a share of.")
@policy_file_option
@json_output_options
@handle_errors(ValueError, OSError, RuntimeError)
def cycle_cmd(site_name, nodes, pending, formats, repeat, live, root, fill, unheld, cycles, interval, policy_file,
              as_json, output) -> None:
    """CPU seconds of parse, each cycle step and decide on synthetic snapshots at site scale.

    The site (--site) is grown to --nodes with --pending jobs waiting; default policy: DQN ranking, packing,
    the power planner (--policy-file for another). With --live: one whole cycle on a running local cluster."""
    from ..cycle.bench import bench_cycle
    from ..policy import policy_from_dict
    from ..sim.run import provenance
    from ..site import load_site, resolve_site_path

    if live:
        _live(root, fill, unheld, cycles, interval, policy_file, as_json, output)
        return
    spec = load_policy_file(policy_file, ()) or policy_from_dict(DEFAULT_POLICY, "bench cycle default")
    site = load_site(resolve_site_path(site_name))
    say = (lambda m: None) if as_json else (lambda m: click.echo(f"... {m}", err=True))
    out = {**bench_cycle(site, spec, nodes, pending, list(formats), repeat, say),
           "policy": policy_file or DEFAULT_POLICY, "provenance": provenance()}

    def text() -> None:
        click.echo(f"{'format':<7} {'nodes':>6} {'pending':>8} {'step':<8} {'cpu_s':>8} {'wall_s':>8} {'actions':>8}")
        for r in out["rows"]:
            click.echo(f"{r['format']:<7} {r['nodes']:>6} {r['pending']:>8} {r['step']:<8} {r['seconds']:>8.3f} "
                       f"{r['wall_s']:>8.3f} {r['actions']:>8}")
        for e in out["exponents"]:
            click.echo(f"growth with pending jobs, {e['format']} {e['nodes']} nodes {e['step']}: "
                       f"exponent {e['exponent']:.2f} over {e['points']} points")

    deliver(out, as_json, output, text)


def _live(root: Path | None, fill: int, unheld: bool, cycles: int, interval: float, policy_file, as_json: bool,
          output) -> None:
    import json

    from ..cluster.local import LocalCluster
    from ..cluster.procs import is_running
    from ..cluster.queue_fill import fill_queue
    from ..cycle.bench_live import bench_live
    from ..pack.bench import machine
    from ..sim.run import provenance

    if root is None:
        raise click.UsageError("--live needs --root (the running local cluster's state directory)")
    cluster = LocalCluster(root)
    if not is_running(cluster.state().get("slurmctld_pid"), "slurmctld"):
        raise click.UsageError(f"no running local cluster at {root} (`hetsched cluster up SITE --root {root}`)")
    say = (lambda m: None) if as_json else (lambda m: click.echo(f"... {m}", err=True))
    policy = json.loads(Path(policy_file).read_text()) if policy_file else DEFAULT_POLICY
    filled = None
    if fill:
        client = cluster.client()
        have = len(client.run("squeue", "-h", "-r", "-t", "PD", "-o", "%i").stdout.split())
        if have < fill:
            say(f"submitting {fill - have} {'unheld' if unheld else 'held'} job(s)")
            filled = fill_queue(client, fill - have, hold=not unheld, say=say)
    out = {**bench_live(cluster, policy, cycles, interval, say=say), "filled": filled, "policy": policy,
           "machine": machine(), "provenance": provenance()}

    def text() -> None:
        click.echo(f"{out['nodes']} nodes, {out['pending']} pending, Slurm {out['slurm_version']}")
        for name, r in out["snapshot_reads"].items():
            click.echo(f"read {name:<24} wall {r['wall_s']:>7.2f} s  cpu {r['cpu_s']:>6.2f} s")
        for r in out["rows"]:
            click.echo(f"decide step {r['step']:<8} cpu {r['seconds']:>7.3f} s  wall {r['wall_s']:>7.3f} s  "
                       f"actions {r['actions']}")
        for i, c in enumerate(out["cycles"], 1):
            cost = c["rpc_cost"]
            click.echo(f"cycle once #{i}: wall {c['wall_s']:.2f} s, cpu {c['cpu_s']:.2f} s, {c['actions']} action(s); "
                       f"slurmctld RPC time {cost['rpc_time_s']:.3f} s (suite {cost['suite_rpc_time_s']:.3f} s, "
                       f"{100 * cost['suite_share_of_interval']:.1f} % of a {out['interval_s']:g} s interval)")

    deliver(out, as_json, output, text)
