"""``hetsched bench cycle``: CPU time of the cycle's pure part (parse + every step of decide) at site scale."""

from __future__ import annotations

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
@policy_file_option
@json_output_options
@handle_errors(ValueError, OSError)
def cycle_cmd(site_name, nodes, pending, formats, repeat, policy_file, as_json, output) -> None:
    """CPU seconds of parse, each cycle step and decide on synthetic snapshots at site scale.

    The site (--site) is grown to --nodes with --pending jobs waiting; default policy: DQN ranking, packing,
    the power planner (--policy-file for another)."""
    from ..cycle.bench import bench_cycle
    from ..policy import policy_from_dict
    from ..sim.run import provenance
    from ..site import load_site, resolve_site_path

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
