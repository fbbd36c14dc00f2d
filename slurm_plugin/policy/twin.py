"""The policy file's optional ``twin:`` section: what ``hetsched tune`` predicted for the policy it wrote.

``hetsched tune`` replays the site's history in the simulator and writes the chosen policy together with this
section; the live guard (:mod:`slurm_plugin.cycle.guard`) watches ``objective`` against ``predicted`` and rolls
back to ``previous`` (null: the default policy) when live falls behind. Only ``objective`` and ``predicted``
are required, and ``predicted`` must hold the objective's metric::

    twin:
      generated_at: "2026-12-01T10:00:00Z"   # ISO-8601 UTC (an unquoted YAML timestamp is accepted too)
      history: {path: /path/to/history, sha256: "...", jobs: 12345, start: <epoch s>, end: <epoch s>}
      objective: avg_bsld                     # avg_bsld | avg_wait_s
      predicted: {avg_bsld: 3.2, avg_wait_s: 410.0, max_wait_s: 86000.0, energy_kwh: 1234.0}
      runner_up: {ranking: sjf, backfill: true, predicted: {avg_bsld: 3.4, avg_wait_s: 450.0}}
      why: "objective 3.1; the best objective; max wait within the bound ..."   # why the ranking won (tune)
      packing: {swept: true, enabled: false, ranking: sjf, predicted: {avg_bsld: 3.3, avg_wait_s: 420.0},
                runner_up: {enabled: true, predicted: {avg_bsld: 3.3, avg_wait_s: 421.0}}, why: "..."}
      previous: /etc/hetsched/policy.d/policy-20261130T100000Z.yaml   # relative: to this file's directory
      fidelity: {checked: true, passed: false, forced: true, replayed_as: fcfs, jobs: 28475, kendall_tau: 0.998,
                 mean_wait_real_s: 15296, mean_wait_sim_s: 6890, min_tau: 0.9, wait_rel: 0.1, reason: "..."}

``packing`` is the tuner's packing sweep (:mod:`slurm_plugin.tune.packing`): the chosen switch under the
chosen ranking, its held-back metrics (with the site's speed factors) and the other arm's; ``swept: false`` (with
``why``): not swept, the file's packing section is the previous file's.
``fidelity`` is the tuner's replay of the history under the policy the site ran, against the recorded starts
(:mod:`slurm_plugin.tune.fidelity_gate`); ``forced``: the file was written although the check failed.

Strict like the rest of the policy file: unknown keys are refused with the valid ones, and every error names
``file: twin.field``. This module imports nothing but :mod:`.errors` (``spec`` imports it).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path

from .errors import PolicyError

OBJECTIVES = ("avg_bsld", "avg_wait_s")


@dataclass(frozen=True)
class TwinMetrics:
    """Metrics of a replay of the held-back history (any may be absent)."""

    avg_bsld: float | None = None
    avg_wait_s: float | None = None
    max_wait_s: float | None = None
    energy_kwh: float | None = None

    def get(self, metric: str) -> float | None:
        return getattr(self, metric)


@dataclass(frozen=True)
class TwinHistory:
    """The history the twin replayed: where it came from, its digest, job count and time span (epoch s)."""

    path: str | None = None
    sha256: str | None = None
    jobs: int | None = None
    start: float | None = None
    end: float | None = None


@dataclass(frozen=True)
class TwinRunnerUp:
    """The second-best candidate and what the twin predicted for it (``ranking``: the tuner's candidate name)."""

    ranking: str | None = None
    backfill: bool | None = None
    predicted: TwinMetrics | None = None


@dataclass(frozen=True)
class TwinPackingRunnerUp:
    """The packing arm not chosen and what the twin predicted for it."""

    enabled: bool | None = None
    predicted: TwinMetrics | None = None


@dataclass(frozen=True)
class TwinPacking:
    """The packing sweep: ``enabled`` (the chosen switch) and its prediction, under ``ranking``."""

    swept: bool = False
    enabled: bool | None = None
    ranking: str | None = None
    predicted: TwinMetrics | None = None
    runner_up: TwinPackingRunnerUp | None = None
    why: str | None = None


@dataclass(frozen=True)
class TwinFidelity:
    """The twin's fidelity check on the history (see the module docstring)."""

    checked: bool = False
    passed: bool = False
    forced: bool = False
    reason: str | None = None
    replayed_as: str | None = None
    jobs: int | None = None
    kendall_tau: float | None = None
    kendall_tau_wait: float | None = None
    mean_wait_real_s: float | None = None
    mean_wait_sim_s: float | None = None
    wait_mae_s: float | None = None
    min_tau: float | None = None
    wait_rel: float | None = None
    records: tuple[TwinFidelity, ...] = ()  # `tune --fidelity-record`: replays on the real slurmctld, judged alike


@dataclass(frozen=True)
class TwinSection:
    objective: str
    predicted: TwinMetrics
    generated_at: str | None = None
    history: TwinHistory | None = None
    runner_up: TwinRunnerUp | None = None
    previous: str | None = None  # the policy file this one replaced; None: the defaults were running
    fidelity: TwinFidelity | None = None
    packing: TwinPacking | None = None
    why: str | None = None  # why the tuner chose the ranking (its selection rule's reason, with the bound's cost)

    def predicted_value(self) -> float:
        """The predicted value of the objective (present: checked on load)."""
        return self.predicted.get(self.objective)  # type: ignore[return-value]


def _mapping(data, where: str, cls) -> dict:
    """``data`` as a mapping whose keys are ``cls``'s fields (unknown keys refused, listing the valid ones)."""
    if not isinstance(data, dict):
        raise PolicyError(where, f"expected a mapping, got {type(data).__name__}")
    valid = [f.name for f in dataclasses.fields(cls)]
    for key in data:
        if key not in valid:
            raise PolicyError(f"{where}.{key}", f"unknown key (valid: {', '.join(valid)})")
    return data


def _number(value, where: str, minimum: float = 0.0) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PolicyError(where, f"must be a finite number (got {value!r})")
    if value < minimum:
        raise PolicyError(where, f"must be >= {minimum:g} (got {value})")
    return float(value)


def _text(value, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise PolicyError(where, f"must be text (got {value!r})")
    return value


def _timestamp(value, where: str) -> str | None:
    """ISO-8601 UTC text, normalised to ``YYYY-MM-DDTHH:MM:SSZ`` (YAML may have parsed it to a datetime)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise PolicyError(where, f"not an ISO-8601 time (got {value!r})") from None
    if not isinstance(value, dt.datetime):
        raise PolicyError(where, f"must be an ISO-8601 UTC time (got {value!r})")
    if value.tzinfo is None or value.utcoffset() != dt.timedelta(0):
        raise PolicyError(where, f"must be UTC ('Z' or +00:00), got {value.isoformat()}")
    return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _metrics(data, where: str) -> TwinMetrics:
    data = _mapping(data, where, TwinMetrics)
    return TwinMetrics(**{k: _number(v, f"{where}.{k}") for k, v in data.items()})


def _history(data, where: str) -> TwinHistory:
    data = _mapping(data, where, TwinHistory)
    jobs = data.get("jobs")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0):
        raise PolicyError(f"{where}.jobs", f"must be a count >= 0 (got {jobs!r})")
    history = TwinHistory(_text(data.get("path"), f"{where}.path"), _text(data.get("sha256"), f"{where}.sha256"),
                          jobs, _number(data.get("start"), f"{where}.start"),
                          _number(data.get("end"), f"{where}.end"))
    if history.start is not None and history.end is not None and history.end < history.start:
        raise PolicyError(f"{where}.end", f"before start ({history.end:g} < {history.start:g})")
    return history


def _runner_up(data, where: str) -> TwinRunnerUp:
    data = _mapping(data, where, TwinRunnerUp)
    backfill = data.get("backfill")
    if backfill is not None and not isinstance(backfill, bool):
        raise PolicyError(f"{where}.backfill", f"must be true or false (got {backfill!r})")
    predicted = data.get("predicted")
    return TwinRunnerUp(_text(data.get("ranking"), f"{where}.ranking"), backfill, None if predicted is None else _metrics(predicted, f"{where}.predicted"))


def _flag(value, where: str) -> bool:
    if not isinstance(value, bool):
        raise PolicyError(where, f"must be true or false (got {value!r})")
    return value


def _packing(data, where: str) -> TwinPacking:
    data = _mapping(data, where, TwinPacking)
    flags = {k: _flag(data[k], f"{where}.{k}") for k in ("swept", "enabled") if data.get(k) is not None}
    predicted, runner_up = data.get("predicted"), data.get("runner_up")
    if runner_up is not None:
        r = _mapping(runner_up, f"{where}.runner_up", TwinPackingRunnerUp)
        rp = r.get("predicted")
        runner_up = TwinPackingRunnerUp(
            None if r.get("enabled") is None else _flag(r["enabled"], f"{where}.runner_up.enabled"),
            None if rp is None else _metrics(rp, f"{where}.runner_up.predicted"))
    return TwinPacking(**flags, ranking=_text(data.get("ranking"), f"{where}.ranking"),
                       predicted=None if predicted is None else _metrics(predicted, f"{where}.predicted"),
                       runner_up=runner_up, why=_text(data.get("why"), f"{where}.why"))


def _fidelity(data, where: str) -> TwinFidelity:
    data = _mapping(data, where, TwinFidelity)
    jobs = data.get("jobs")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0):
        raise PolicyError(f"{where}.jobs", f"must be a count >= 0 (got {jobs!r})")
    flags = {k: _flag(data[k], f"{where}.{k}") for k in ("checked", "passed", "forced") if k in data}
    texts = {k: _text(data.get(k), f"{where}.{k}") for k in ("reason", "replayed_as")}
    taus = {k: _number(data.get(k), f"{where}.{k}", -1.0) for k in ("kendall_tau", "kendall_tau_wait")}
    rest = {k: _number(data.get(k), f"{where}.{k}") for k in ("mean_wait_real_s", "mean_wait_sim_s", "wait_mae_s",
                                                                "min_tau", "wait_rel")}
    records = data.get("records", [])
    if not isinstance(records, list):
        raise PolicyError(f"{where}.records", f"must be a list (got {type(records).__name__})")
    return TwinFidelity(**flags, **texts, jobs=jobs, **taus, **rest,
                        records=tuple(_fidelity(r, f"{where}.records[{i}]") for i, r in enumerate(records)))


def twin_from_dict(data, where: str = "twin") -> TwinSection | None:
    """The ``twin:`` section (None for null); :class:`PolicyError` names the field (``twin.predicted.avg_bsld``)."""
    if data is None:
        return None
    data = _mapping(data, where, TwinSection)
    for key in ("objective", "predicted"):
        if data.get(key) is None:
            raise PolicyError(f"{where}.{key}", "required (the metric the guard watches and its prediction)")
    objective = data["objective"]
    if objective not in OBJECTIVES:
        raise PolicyError(f"{where}.objective", f"unknown choice {objective!r} (valid: {', '.join(OBJECTIVES)})")
    predicted = _metrics(data["predicted"], f"{where}.predicted")
    if predicted.get(objective) is None:
        raise PolicyError(f"{where}.predicted.{objective}", f"required: it is the objective ({objective})")
    history, runner_up, fidelity = data.get("history"), data.get("runner_up"), data.get("fidelity")
    packing = data.get("packing")
    return TwinSection(objective, predicted, _timestamp(data.get("generated_at"), f"{where}.generated_at"),
                       None if history is None else _history(history, f"{where}.history"),
                       None if runner_up is None else _runner_up(runner_up, f"{where}.runner_up"),
                       _text(data.get("previous"), f"{where}.previous"),
                       None if fidelity is None else _fidelity(fidelity, f"{where}.fidelity"),
                       None if packing is None else _packing(packing, f"{where}.packing"),
                       _text(data.get("why"), f"{where}.why"))


def resolve_previous(twin: TwinSection | None, policy_dir: Path) -> TwinSection | None:
    """``twin`` with a relative ``previous`` made relative to the policy file's directory."""
    if twin is None or twin.previous is None or Path(twin.previous).is_absolute():
        return twin
    return dataclasses.replace(twin, previous=str(policy_dir / twin.previous))
