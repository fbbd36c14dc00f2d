"""Helpers shared by the CLI modules: error exits, JSON output, hostlists."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps

import click
import hostlist

from ..scale.warm import DEFAULT_WAIT_PRICE_W
from ..site import SiteError

# Exit codes, as Slurm's own commands use them: 0 ok, 1 failure, 2 bad usage/input.
EXIT_FAIL, EXIT_USAGE = 1, 2


def fail(message: str, code: int = EXIT_FAIL) -> None:
    click.echo(f"hetsched: {message}", err=True)
    sys.exit(code)


def handle_errors(*expected: type[Exception]) -> Callable:
    """Turn known errors into one message on stderr and an exit code instead of a traceback."""

    def deco(fn: Callable) -> Callable:
        @wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except SiteError as err:
                fail(str(err), EXIT_USAGE)
            except expected as err:
                fail(str(err))

        return wrapper

    return deco


def emit_json(obj: object) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=True, default=str))


def expand_hosts(expr: tuple[str, ...] | str) -> list[str]:
    """Expand Slurm hostlists (``gpu[1-3],arm1``); raises click.BadParameter on a malformed one."""
    exprs = [expr] if isinstance(expr, str) else list(expr)
    out: list[str] = []
    for e in exprs:
        try:
            out += hostlist.expand_hostlist(e)
        except hostlist.BadHostlist as err:
            raise click.BadParameter(f"bad hostlist '{e}': {err}") from None
    return out


def stack(*decorators: Callable) -> Callable:
    """Apply ``decorators`` as if written top to bottom above a function (shared click option sets)."""

    def apply(fn: Callable) -> Callable:
        for deco in reversed(decorators):
            fn = deco(fn)
        return fn

    return apply


# The power planner's knobs, the same for `hetsched scale` and `hetsched cycle`; see scale_config().
scale_options = stack(
    click.option("--idle-grace", "grace", type=float, default=300.0, show_default=True,
                 help="Seconds a node must be idle before it is powered down (with --wait-price 0)."),
    click.option("--warm", type=int, default=1, show_default=True,
                 help="Idle nodes kept on per node group (with --wait-price 0)."),
    click.option("--wait-price", type=float, default=DEFAULT_WAIT_PRICE_W, show_default=True,
                 help="Watts one second of job wait is worth: warm pools and idle grace per group from the "
                      "break-even rule on its arrival rate (scale/warm.py); 0 = fixed --warm/--idle-grace."),
    click.option("--arch/--no-arch", default=True, show_default=True,
                 help="Move warm pools to the cheapest CPU group when portable work dominates (scale/arch.py)."),
    click.option("--pid/--no-pid", default=False, show_default=True,
                 help="Add PID headroom on utilization (costs energy in the simulator: results/scale)."),
)


def scale_config(grace: float, warm: int, wait_price: float, arch: bool, pid: bool):
    """The planner's ScaleConfig from the ``scale_options`` values."""
    from ..scale.planner import GroupLimits, ScaleConfig

    return ScaleConfig(idle_grace_s=grace, default_limits=GroupLimits(warm=warm),
                       wait_price_w=wait_price if wait_price > 0 else None, arch=arch, pid=pid)
