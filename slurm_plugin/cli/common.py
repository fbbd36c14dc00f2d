"""Helpers shared by the CLI modules: exit codes, error exits, the site to run, JSON output, hostlists."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from functools import wraps
from pathlib import Path
from typing import NoReturn

import click
import hostlist

from ..scale.warm import DEFAULT_WAIT_PRICE_W
from ..site import SiteError

# Exit codes (README "CLI conventions"): 0 ok, 1 failure (e.g. an action failed), 2 bad usage or input (as
# click and Slurm's own commands use it), 3 another writer holds the state lock, 4 slurmctld unreachable.
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_LOCKED, EXIT_UNREACHABLE = 0, 1, 2, 3, 4

SITE_ENV = "HETSCHED_SITE"
SYSTEM_SITE = Path("/etc/hetsched/site.yaml")


def fail(message: str, code: int = EXIT_FAIL) -> NoReturn:
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


def resolve_site(site: str | None) -> str:
    """The site a production command runs: SITE as given (a path or a bundled name such as ``demo``), else
    ``$HETSCHED_SITE``, else ``/etc/hetsched/site.yaml``; exits 2 naming all three when none is there.

    The bundled demo is never a silent default: it runs only when named."""
    if site:
        return site
    if os.environ.get(SITE_ENV):
        return os.environ[SITE_ENV]
    if SYSTEM_SITE.is_file():
        return str(SYSTEM_SITE)
    fail(f"no site given: name one as SITE or --site (a site file, or 'demo' for the bundled example), "
         f"set ${SITE_ENV}, or create {SYSTEM_SITE}", EXIT_USAGE)


@contextlib.contextmanager
def one_writer(state_dir: Path) -> Iterator[None]:
    """Hold ``<state_dir>/hetsched.lock`` for the block (``hetsched cycle`` and ``scale apply`` share it); exit 3
    with the holder's pid if another process has it."""
    from ..fsio import LockHeld, exclusive_lock

    try:
        with exclusive_lock(Path(state_dir) / "hetsched.lock"):
            yield
    except LockHeld as err:
        fail(f"{err}; exiting without changing anything", EXIT_LOCKED)


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


site_arguments = stack(
    click.argument("site", required=False),
    click.option("--site", "site_option", metavar="SITE",
                 help=f"Site file or bundled name ('demo' only when named); default ${SITE_ENV}, then {SYSTEM_SITE}."),
)


def site_from(site: str | None, site_option: str | None) -> str:
    """The site of a command taking :data:`site_arguments`: SITE or --site (not two different ones), resolved."""
    if site and site_option and site != site_option:
        fail(f"SITE {site!r} and --site {site_option!r} disagree; give one", EXIT_USAGE)
    return resolve_site(site or site_option)


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
