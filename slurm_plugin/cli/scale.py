"""``hetsched scale``: plan (dry run) or apply the elastic power decisions for the live cluster."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import click
import hostlist

from ..decision import Journal, SetPartitionNodes, SlurmApplier
from ..decision.applier import commands_for
from ..scale.memory_store import load_memory, save_memory
from ..scale.planner import GroupLimits, ScaleConfig, plan_power
from ..scale.reshape import plan_reshape
from ..site import load_site
from ..slurm import SlurmClient, SlurmError
from ..snapshot import collect_snapshot
from .common import emit_json, handle_errors
from .why import journal_option

state_option = click.option("--state", type=click.Path(dir_okay=False, path_type=Path),
                            default="/var/lib/hetsched/scale-memory.json", show_default=True,
                            envvar="HETSCHED_SCALE_STATE", help="Where the planner keeps what it must remember.")


@click.group()
def scale() -> None:
    """Follow demand and the calendar: power nodes up/down, reshape partitions."""


def _plan(site: str | None, state: Path, grace: float, warm: int):
    parsed = load_site(site)
    config = ScaleConfig(idle_grace_s=grace, default_limits=GroupLimits(warm=warm))
    snap = collect_snapshot(SlurmClient())
    now = time.time()
    reshape = plan_reshape(snap, parsed, dt.datetime.fromtimestamp(now, dt.timezone.utc))
    power, memory = plan_power(snap, parsed, config, load_memory(state), now)
    return reshape + power, memory


def _what(action) -> str:
    if isinstance(action, SetPartitionNodes):
        return f"partition {action.partition} = {hostlist.collect_hostlist(list(action.nodes))}"
    return f"{action.action} {hostlist.collect_hostlist(list(action.nodes))}"


_common = [click.argument("site", required=False), state_option,
           click.option("--idle-grace", "grace", type=float, default=300.0, show_default=True,
                        help="Seconds a node must be idle before it is powered down."),
           click.option("--warm", type=int, default=1, show_default=True,
                        help="Idle nodes kept on per node group.")]


def _with_common(fn):
    for deco in reversed(_common):
        fn = deco(fn)
    return fn


@scale.command()
@_with_common
@click.option("--json", "as_json", is_flag=True)
@handle_errors(SlurmError)
def plan(site: str | None, state: Path, grace: float, warm: int, as_json: bool) -> None:
    """Show what would be powered up/down and why (dry run: changes nothing, remembers nothing)."""
    decision, _ = _plan(site, state, grace, warm)
    if as_json:
        emit_json([{"kind": a.kind, "reason": a.reason, "commands": commands_for(a)} for a in decision.actions])
        return
    if not decision.actions:
        click.echo("nothing to change")
    for a in decision.actions:
        click.echo(f"{_what(a):40} {a.reason}")


@scale.command()
@_with_common
@journal_option
@handle_errors(SlurmError)
def apply(site: str | None, state: Path, grace: float, warm: int, journal: Path) -> None:
    """Plan and apply one cycle; exit 1 if any action failed."""
    decision, memory = _plan(site, state, grace, warm)
    results = SlurmApplier(SlurmClient(), Journal(journal)).apply(decision)
    save_memory(state, memory)
    for r in results:
        click.echo(f"{'ok    ' if r.ok else 'FAILED'} {_what(r.action):40} {r.action.reason}"
                   f"{'' if r.ok else ' - ' + r.error}")
    if not all(r.ok for r in results):
        raise SystemExit(1)
