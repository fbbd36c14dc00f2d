"""The policy spec: which ranking, packing and scaling a cluster runs, with their parameters, as one frozen value.

Both the live cycle (``hetsched cycle once|run --policy-file F``, built by :mod:`slurm_plugin.cycle.policy`) and
the simulator (``hetsched sim run --policy-file F``, built by :mod:`slurm_plugin.sim.policy`) are built from it,
so a simulated policy is the policy that runs live. This module imports nothing from ``sim/`` or ``cycle/``.

A policy file (YAML or JSON; every key optional, unknown keys refused with the valid ones)::

    ranking: {name: sjf, age_floor: true, age_floor_hours: 24}    # fcfs sjf wfp3 unicep f1 multifactor dqn weighted
    packing: {enabled: true, time_cap_s: 1.0}
    scaling: {name: planner, wait_price_w: 10000, arch: true, pid: false}  # always-on idle-timer planner
    reshape: true                                                  # live only: the simulator has no calendar
    steps: [rank, pack, reshape, power]                            # live cycle order (the default)
    budget: {cycle_s: 10, decide_s: 3, pack_s: 1}                  # live only: time budgets (s)
    twin: {objective: avg_bsld, predicted: {avg_bsld: 3.2}, ...}   # written by `hetsched tune`: policy/twin.py

No file and an empty file are the same policy, :class:`PolicySpec()`: Slurm's own priority/multifactor with no
SiteFactor at all (no age floor), packing, reshaping, and the planner at the break-even rule, which is what
``hetsched cycle`` runs without options.

Choices:

* ranking ``multifactor`` is Slurm's own priority/multifactor: live it sets no SiteFactor (only the age floor,
  when on); the simulator uses its approximation. ``age_floor`` defaults to on for every ranking except
  ``multifactor``, whose own age factor already ages jobs (so ``ranking: {name: multifactor}`` and no ranking
  section both mean Slurm's priority alone). ``dqn`` reads ``model`` (a path; default: the shipped model).
  The other heuristics are the simulator's scorers; live, their order becomes SiteFactor levels. ``weighted``
  (what ``hetsched tune`` fits to a site) reads ``w_estimate``, ``w_size``, ``w_age``: score = w_estimate *
  ln(time limit) + w_size * ln(cores) - w_age * ln(wait + 60 s), lower first; the others refuse those keys.
* scaling ``always-on``: nothing powers down. ``idle-timer``: a node idle ``suspend_time_s`` goes down (Slurm's
  SuspendTime; live this is the planner with no warm pool, no architecture controller and no PID).
  ``planner``: the hetsched planner (``scale/planner.py`` live, ``sim/scaling.WarmPoolPower`` simulated):
  the break-even rule at ``wait_price_w`` (null: a fixed ``warm_nodes`` per group and ``grace_s``; null with
  ``quiet_grace_s``: the demand-aware idle timer of ``scale/warm.py``, reading ``grace_s``, ``quiet_grace_s`` and
  ``window_s``, which ``hetsched tune`` chooses when it beats Slurm's timer on the site's history). The planner
  also reads ``capacity_plan``: the file ``hetsched cost plan --output`` wrote, whose nodes-on per group and
  hour become a floor (read when the policy is loaded).
  A scaling key the chosen scaling does not read is refused rather than ignored.
* steps: the live cycle's steps in the order they run, names of the cycle step registry
  (:data:`STEP_NAMES`: ``rank pack reshape power guard dag`` and any ``cycle.steps.register_step`` added); a step
  switched on by its section must be listed, a listed step switched off is skipped. The simulator's engine has
  its own fixed order (rank, pack, power) and reads the sections only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..scale.warm import DEFAULT_MIN_GRACE_S, DEFAULT_WAIT_PRICE_W, DEFAULT_WINDOW_S
from .errors import PolicyError
from .twin import TwinSection, resolve_previous, twin_from_dict

RANKINGS = ("fcfs", "sjf", "wfp3", "unicep", "f1", "multifactor", "dqn", "weighted")
DEFAULT_STEPS = ("rank", "pack", "reshape", "power")
# the cycle step registry's names: the built-ins (the defaults and the live guard, cycle/guard.py), named here so
# a policy file is checked the same whatever has been imported, and any a plugin adds (cycle/steps.py's
# register_step appends it); kept in this layer so a policy file is checked when it is loaded, before any step
# is built
STEP_NAMES: list[str] = [*DEFAULT_STEPS, "guard", "dag"]
SCALINGS = ("always-on", "idle-timer", "planner")
MAX_FILE_BYTES = 1 << 20


def _choice(*names: str):
    return lambda v: None if v in names else f"unknown choice {v!r} (valid: {', '.join(names)})"


def _positive(v) -> str | None:
    return None if v > 0 else f"must be > 0 (got {v})"


def _non_negative(v) -> str | None:
    return None if v >= 0 else f"must be >= 0 (got {v})"


def _fraction(v) -> str | None:
    return None if 0 < v <= 1 else f"must be in (0, 1] (got {v})"


def _weight(v) -> str | None:
    return None if -10 <= v <= 10 else f"must be in [-10, 10] (got {v})"


def _spec(default, check=None, optional: bool = False):
    """A spec field: its default, an optional check (value -> error text or None), whether null is allowed."""
    return field(default=default, metadata={"check": check, "optional": optional})


@dataclass(frozen=True)
class RankingSpec:
    name: str = _spec("multifactor", _choice(*RANKINGS))
    model: str | None = _spec(None, optional=True)  # dqn only: the model file (.npz); null: the shipped one
    # jobs pending age_floor_hours or more go first, oldest first; null/absent: on, except for multifactor
    age_floor: bool | None = _spec(None, optional=True)
    age_floor_hours: float = _spec(24.0, _positive)
    w_estimate: float = _spec(1.0, _weight)  # weighted only (see the module's docstring)
    w_size: float = _spec(0.0, _weight)
    w_age: float = _spec(0.0, lambda v: _non_negative(v) or _weight(v))

    def __post_init__(self) -> None:
        if self.age_floor is None:  # resolved here, so equal policies compare equal whichever way they were said
            object.__setattr__(self, "age_floor", self.name != "multifactor")

    def params(self) -> dict:
        """The parameters the ranking's factory takes (:func:`slurm_plugin.sim.hooks.ranking`)."""
        return {k: getattr(self, k) for k in WEIGHTS} if self.name == "weighted" else {}


WEIGHTS = ("w_estimate", "w_size", "w_age")

@dataclass(frozen=True)
class PackingSpec:
    enabled: bool = _spec(True)
    time_cap_s: float = _spec(1.0, _positive)  # the MILP's time limit per cycle


@dataclass(frozen=True)
class ScalingSpec:
    name: str = _spec("planner", _choice(*SCALINGS))
    suspend_time_s: float = _spec(600.0, _positive)  # idle-timer
    wait_price_w: float | None = _spec(DEFAULT_WAIT_PRICE_W, _positive, optional=True)  # planner; null: fixed
    warm_nodes: int = _spec(1, _non_negative)  # planner without wait price: idle nodes kept on per group
    grace_s: float = _spec(300.0, _non_negative)  # planner without wait price: idle time before power-down
    # planner without wait price: the demand-aware idle timer (idle nodes beyond the expected demand go down
    # after quiet_grace_s, every idle node after grace_s); null: the fixed warm pool
    quiet_grace_s: float | None = _spec(None, _non_negative, optional=True)
    min_grace_s: float = _spec(DEFAULT_MIN_GRACE_S, _non_negative)
    window_s: float = _spec(DEFAULT_WINDOW_S, _positive)  # arrival rate window
    target_util: float = _spec(0.75, _fraction)
    arch: bool = _spec(True)  # the architecture controller (scale/arch.py)
    pid: bool = _spec(False)  # PID headroom on utilization
    # planner: the hourly plan `hetsched cost plan --output F` wrote (a floor of nodes on per group and hour;
    # scale/capacity_plan.py); relative to the policy file's directory; null: none
    capacity_plan: str | None = _spec(None, optional=True)


@dataclass(frozen=True)
class BudgetSpec:
    """Live only: the cycle's time budget in seconds (null: none). ``decide_s`` bounds the steps together (rank,
    pack and reshape are skipped once it is spent; wipe, power and the guard always run), ``<step>_s`` each step
    (packing's MILP gets at most its own), ``apply_s`` the applier (job updates past it wait for the next cycle,
    most urgent first: ``decision/applier.by_urgency``), ``cycle_s`` the whole cycle (the apply gets what the
    read and the steps left of it, and no more than ``apply_s``)."""

    cycle_s: float | None = _spec(None, _positive, optional=True)
    decide_s: float | None = _spec(None, _positive, optional=True)
    apply_s: float | None = _spec(None, _positive, optional=True)
    rank_s: float | None = _spec(None, _positive, optional=True)
    pack_s: float | None = _spec(None, _positive, optional=True)
    reshape_s: float | None = _spec(None, _positive, optional=True)
    power_s: float | None = _spec(None, _positive, optional=True)


@dataclass(frozen=True)
class PolicySpec:
    ranking: RankingSpec = field(default_factory=RankingSpec)
    packing: PackingSpec = field(default_factory=PackingSpec)
    scaling: ScalingSpec = field(default_factory=ScalingSpec)
    reshape: bool = _spec(True)  # live only: partitions by calendar (policy.reshapes of the site)
    steps: tuple[str, ...] = DEFAULT_STEPS  # live only: the cycle's steps in order (see the module docstring)
    twin: TwinSection | None = None  # what `hetsched tune` predicted (policy/twin.py); the live guard reads it
    budget: BudgetSpec = field(default_factory=BudgetSpec)  # live only: the cycle's time budget

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


SECTIONS = {"ranking": RankingSpec, "packing": PackingSpec, "scaling": ScalingSpec, "budget": BudgetSpec}


def _value(f: dataclasses.Field, value, where: str):
    """``value`` checked against the field's type (from its default) and its check."""
    if value is None:
        if f.metadata.get("optional"):
            return None
        raise PolicyError(where, "must not be null")
    kind = bool if f.default is None and f.type.startswith("bool") else type(f.default)
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind is float or f.default is None and f.type.startswith("float"):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, str) and value != ""
    if not ok:
        want = {bool: "true or false", int: "an integer", str: "text"}.get(kind, "a finite number")
        raise PolicyError(where, f"must be {want} (got {value!r})")
    error = f.metadata["check"](value) if f.metadata.get("check") else None
    if error:
        raise PolicyError(where, error)
    return value


def _fields(cls, data, where: str) -> dict:
    if not isinstance(data, dict):
        raise PolicyError(where, f"expected a mapping, got {type(data).__name__}")
    known = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in known:
            raise PolicyError(f"{where}.{key}" if where else str(key),
                              f"unknown key (valid: {', '.join(known)})")
    out = {}
    for key, value in data.items():
        path = f"{where}.{key}" if where else key
        if key == "twin" and not where:
            out[key] = twin_from_dict(value, path)
            continue
        if key == "steps" and not where:
            out[key] = _steps(value, path)
            continue
        out[key] = policy_section(SECTIONS[key], value, path) if key in SECTIONS and not where else \
            _value(known[key], value, path)
    return out


def policy_section(cls, data, where: str):
    return cls(**_fields(cls, data, where))


def _steps(value, where: str) -> tuple[str, ...]:
    """A list of distinct names of the cycle step registry."""
    if not isinstance(value, list) or not value:
        raise PolicyError(where, f"expected a non-empty list of step names, got {value!r}")
    for i, name in enumerate(value):
        if name not in STEP_NAMES:
            raise PolicyError(f"{where}[{i}]", f"unknown step {name!r} (valid: {', '.join(STEP_NAMES)})")
        if name in value[:i]:
            raise PolicyError(f"{where}[{i}]", f"step {name!r} listed twice")
    return tuple(value)


def _switched_on(spec: PolicySpec) -> dict[str, str]:
    """Built-in step -> the setting that switches it on, for the steps ``spec`` runs."""
    on = {"rank": f"ranking {spec.ranking.name}" + (" with the age floor" if spec.ranking.age_floor else ""),
          "pack": "packing.enabled", "reshape": "reshape", "power": f"scaling {spec.scaling.name}"}
    off = {"rank": spec.ranking.name == "multifactor" and not spec.ranking.age_floor,
           "pack": not spec.packing.enabled, "reshape": not spec.reshape, "power": spec.scaling.name == "always-on"}
    return {name: why for name, why in on.items() if not off[name]}


def _unlisted_steps(spec: PolicySpec) -> None:
    for name, why in _switched_on(spec).items():
        if name not in spec.steps:
            raise PolicyError("steps", f"{why} runs the {name!r} step, which is not listed: list it or switch it off")


# what each scaling choice reads; a key another choice reads is refused (it would be silently ignored)
SCALING_READS = {"always-on": set(), "idle-timer": {"suspend_time_s"},
                 "planner": {"wait_price_w", "min_grace_s", "window_s", "target_util", "arch", "pid",
                             "capacity_plan"}}
FIXED_POOL_READS = {"warm_nodes", "grace_s", "quiet_grace_s"}  # the planner without a wait price
DEMAND_TIMER_READS = {"wait_price_w", "grace_s", "quiet_grace_s", "window_s"}  # ... with quiet_grace_s


def _unread_scaling_keys(spec: ScalingSpec, given: dict) -> None:
    if spec.quiet_grace_s is not None and (spec.name != "planner" or spec.wait_price_w is not None):
        raise PolicyError("scaling.quiet_grace_s", "only the planner with wait_price_w: null reads it")
    reads = SCALING_READS[spec.name] | (FIXED_POOL_READS if spec.name == "planner" and spec.wait_price_w is None
                                        else set())
    if spec.quiet_grace_s is not None:
        for key in given:
            if key != "name" and key not in DEMAND_TIMER_READS:
                raise PolicyError(f"scaling.{key}", "not read by the demand-aware idle timer (quiet_grace_s set; "
                                                    f"it reads {', '.join(sorted(DEMAND_TIMER_READS))})")
        return
    for key in given:
        if key != "name" and key not in reads:
            who = "the planner with wait_price_w: null" if key in FIXED_POOL_READS else " / ".join(
                n for n, keys in SCALING_READS.items() if key in keys)
            raise PolicyError(f"scaling.{key}", f"not read by scaling {spec.name} (only by {who})")


def policy_from_dict(data, source: str = "<policy>") -> PolicySpec:
    """A :class:`PolicySpec` from parsed YAML/JSON; :class:`PolicyError` names ``source:field.path``."""
    try:
        spec = PolicySpec(**_fields(PolicySpec, {} if data is None else data, ""))
        if spec.ranking.model is not None and spec.ranking.name != "dqn":
            raise PolicyError("ranking.model", f"only the dqn ranking reads a model (ranking is {spec.ranking.name})")
        defaults = RankingSpec()
        for key in WEIGHTS:
            if spec.ranking.name != "weighted" and getattr(spec.ranking, key) != getattr(defaults, key):
                raise PolicyError(f"ranking.{key}", f"only the weighted ranking reads it (ranking is "
                                                    f"{spec.ranking.name})")
        _unread_scaling_keys(spec.scaling, (data or {}).get("scaling") or {})
        _unlisted_steps(spec)
    except PolicyError as err:
        raise PolicyError(f"{source}: {err.where}" if err.where else source, err.message) from None
    return spec


def load_policy(path: str | Path) -> PolicySpec:
    """The policy file at ``path`` (YAML or JSON); :class:`PolicyError` names the file and the field or line.
    A relative ``ranking.model`` or ``scaling.capacity_plan`` is relative to the file's directory."""
    from ..fsio import YamlFileError, read_yaml_file

    p = Path(path)
    try:
        data = read_yaml_file(p, MAX_FILE_BYTES, "a policy file")
    except YamlFileError as err:
        raise PolicyError(err.where, err.message) from None
    spec = policy_from_dict(data, str(p))
    model = spec.ranking.model
    if model is not None and not Path(model).is_absolute():  # a model next to the file is found from anywhere
        spec = dataclasses.replace(spec, ranking=dataclasses.replace(spec.ranking, model=str(p.parent / model)))
    plan = spec.scaling.capacity_plan
    if plan is not None and not Path(plan).is_absolute():
        spec = dataclasses.replace(spec, scaling=dataclasses.replace(spec.scaling, capacity_plan=str(p.parent / plan)))
    return dataclasses.replace(spec, twin=resolve_previous(spec.twin, p.parent))
