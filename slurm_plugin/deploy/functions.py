"""Serverless functions: the registry (``hetsched fn deploy``) and the pilot scaler's pure decision.

A function is ``{name, image, class, command}`` in ``<state>/functions/NAME.json`` (written atomically). Its
invocations are served by pilot jobs (ordinary Slurm jobs, ``--comment class=C fn=NAME``: visible in squeue,
accounted, preemptible by the class's QOS; a pending pilot is backlog the elastic planner powers nodes up
for, like any job). :func:`plan_pilots` decides how many pilots each function should have from its request
rate, and which idle ones to release after the idle timeout (scale to zero).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from ..fsio import write_file_atomic

NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")


class FunctionError(ValueError):
    """A function that cannot be deployed or invoked (message names what and where)."""


@dataclass(frozen=True)
class Function:
    name: str
    image: str
    workload_class: str
    command: str = 'echo "$@"'


def registry(state: str | Path) -> Path:
    return Path(state) / "functions"


def save(state: str | Path, fn: Function, site) -> Path:
    """Validate ``fn`` against ``site`` (its class exists and has form ``function``; the image is in the
    store) and write it; raises :class:`FunctionError` naming the problem."""
    from .images import ImageError, resolve

    if not NAME.match(fn.name):
        raise FunctionError(f"function name {fn.name!r}: lower-case letters, digits and '-', starting with a letter")
    classes = {c.name: c for c in site.policy.workload_classes}
    cls = classes.get(fn.workload_class)
    if cls is None:
        raise FunctionError(f"class {fn.workload_class!r} is not in site {site.name}'s policy.workload_classes "
                            f"(classes: {', '.join(classes) or 'none'})")
    if cls.form != "function":
        raise FunctionError(f"class {fn.workload_class!r} has form {cls.form!r}: functions need a class of form "
                            "'function' (policy.workload_classes[].form)")
    if not site.deploy.image_store:
        raise FunctionError(f"site {site.name}: deploy.image_store is not set (functions run in containers)")
    try:
        resolve(site.deploy.image_store, fn.image)
    except ImageError as err:
        raise FunctionError(str(err)) from None
    return write_file_atomic(registry(state) / f"{fn.name}.json", json.dumps(asdict(fn), indent=1) + "\n")


def load(state: str | Path, name: str) -> Function:
    path = registry(state) / f"{name}.json"
    try:
        return Function(**json.loads(path.read_text()))
    except FileNotFoundError:
        known = sorted(p.stem for p in registry(state).glob("*.json"))
        raise FunctionError(f"no function {name!r} (deployed: {', '.join(known) or 'none'})") from None
    except (ValueError, TypeError) as err:
        raise FunctionError(f"{path}: not a function record ({err})") from None


@dataclass(frozen=True)
class PoolState:
    """One function's pilots as the gateway sees them: ``pending`` (submitted, not connected), ``idle`` and
    ``busy`` connected pilots (``idle_since``: pilot id -> time idle since), ``waiting`` invocations queued,
    ``rate`` invocations/s (recent), ``service_s`` mean time of one invocation, ``last_request`` time."""

    pending: int = 0
    idle: dict = None  # type: ignore[assignment]
    busy: int = 0
    waiting: int = 0
    rate: float = 0.0
    service_s: float = 0.01
    last_request: float = float("-inf")


@dataclass(frozen=True)
class PilotPlan:
    submit: int
    release: tuple
    reason: str


def plan_pilots(pool: PoolState, now: float, idle_timeout_s: float, max_pilots: int,
                target_util: float = 0.5) -> PilotPlan:
    """How many pilots to submit and which idle ones to release (pure).

    Wanted = ceil(rate x service time / target utilisation), at least 1 while requests come (within the idle
    timeout) or wait, at most ``max_pilots``; 0 after ``idle_timeout_s`` without requests (scale to zero).
    Submits the shortfall counting pending pilots; releases pilots idle for the timeout beyond the wanted
    number (the longest idle first)."""
    idle = dict(pool.idle or {})
    have = pool.pending + len(idle) + pool.busy
    active = pool.waiting > 0 or now - pool.last_request < idle_timeout_s
    wanted = min(max_pilots, max(1, math.ceil(pool.rate * pool.service_s / target_util))) if active else 0
    submit = max(0, wanted - have)
    surplus = max(0, have - max(wanted, pool.pending + pool.busy))
    stale = sorted((t, p) for p, t in idle.items() if now - t >= idle_timeout_s)
    release = tuple(p for _, p in stale[:surplus])
    reason = (f"rate {pool.rate:.1f}/s x {pool.service_s * 1000:.1f} ms, {pool.waiting} waiting: want {wanted}, "
              f"have {have} ({pool.pending} pending)")
    return PilotPlan(submit, release, reason)
