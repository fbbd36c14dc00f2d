"""Vertical right-sizing: from finished jobs' usage, what fraction of its CPU/memory request each workload
class should keep. Pure: a :class:`~slurm_plugin.workload.usage.UsageHistory` in, suggestions out.

Per class and resource, a job's *use ratio* is what it used over what it asked:
CPU = CPU time / (elapsed x CPUs), memory = peak memory / requested memory. The class keeps
``factor = min(1, q x (1 + margin))`` of future requests, q being the ``percentile`` (default p95) of the
ratios, so by construction at least that share of past jobs would still have fit with room to spare. A
suggestion is made only with at least ``min_jobs`` jobs that report the resource, and only when it saves at
least ``min_saving`` of the request (else "keep"). ``covered`` is the share of the class's jobs whose ratio is
within the factor - the confidence statement; :func:`holdout` measures the same on jobs the suggestion did
not see (the later part of the history).

Worked example: 40 jobs of class ``web`` ask for 8 CPUs and use 1.0..2.0 CPUs evenly; ratios 0.125..0.25,
p95 ~ 0.244, factor = 0.244 x 1.2 = 0.293: a future ``--cpus-per-task=8`` becomes ceil(8 x 0.293) = 3.
"""

from __future__ import annotations

from pathlib import Path

from dataclasses import asdict, dataclass

import numpy as np

from ..workload.usage import UsageHistory

RESOURCES = ("cpus", "memory")


@dataclass(frozen=True)
class RightsizeParams:
    """``percentile`` of use ratios a class must keep; ``margin`` on top of it; ``min_jobs`` with data before
    suggesting; ``min_saving``: smaller savings are not worth changing anyone's job for."""

    percentile: float = 95.0
    margin: float = 0.2
    min_jobs: int = 30
    min_saving: float = 0.25

    def __post_init__(self) -> None:
        if not 50 <= self.percentile <= 100 or self.margin < 0 or self.min_jobs < 1 or not 0 <= self.min_saving < 1:
            raise ValueError(f"bad right-sizing parameters {self}: want 50 <= percentile <= 100, margin >= 0, "
                             "min_jobs >= 1, 0 <= min_saving < 1")


@dataclass(frozen=True)
class ResourceSuggestion:
    """``action``: ``lower`` (new requests keep ``factor`` of what they ask), ``keep`` or ``too-few-jobs``."""

    resource: str
    action: str
    jobs: int
    p50: float | None
    q: float | None
    factor: float
    covered: float | None
    reason: str


@dataclass(frozen=True)
class ClassSuggestion:
    wclass: str
    jobs: int
    cpus: ResourceSuggestion
    memory: ResourceSuggestion
    confidence: str

    def factor(self, resource: str) -> float:
        """The fraction of a request to keep (1.0 unless the suggestion is to lower)."""
        s = getattr(self, resource)
        return s.factor if s.action == "lower" else 1.0

    def to_json(self) -> dict:
        return asdict(self)


def use_ratios(h: UsageHistory) -> dict[str, np.ndarray]:
    """Per job: used over requested, for each resource (NaN where unknown)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return {"cpus": h.cpu_time_s / (h.elapsed_s * h.req_cpus), "memory": h.used_mem_mb / h.req_mem_mb}


def _one(resource: str, ratios: np.ndarray, p: RightsizeParams) -> ResourceSuggestion:
    r = ratios[np.isfinite(ratios) & (ratios >= 0)]
    if len(r) < p.min_jobs:
        return ResourceSuggestion(resource, "too-few-jobs", len(r), None, None, 1.0, None,
                                  f"{len(r)} job(s) report {resource} use; need {p.min_jobs}")
    q, p50 = float(np.percentile(r, p.percentile)), float(np.median(r))
    factor = min(1.0, q * (1 + p.margin))
    covered = float(np.mean(r <= factor))
    pct = f"p{p.percentile:g}"
    if factor > 1 - p.min_saving:
        return ResourceSuggestion(resource, "keep", len(r), p50, q, 1.0, covered,
                                  f"{pct} use is {q:.0%} of the request: with {p.margin:.0%} margin that saves less "
                                  f"than {p.min_saving:.0%}")
    return ResourceSuggestion(resource, "lower", len(r), p50, q, round(factor, 4), covered,
                              f"{pct} use is {q:.0%} of the request (median {p50:.0%}) over {len(r)} jobs: keep "
                              f"{factor:.0%} ({pct} + {p.margin:.0%} margin; {covered:.1%} of these jobs fit)")


def _confidence(jobs: int, p: RightsizeParams) -> str:
    return "high" if jobs >= 10 * p.min_jobs else "medium" if jobs >= 3 * p.min_jobs else \
        "low" if jobs >= p.min_jobs else "none"


def suggest(history: UsageHistory, params: RightsizeParams = RightsizeParams(),
            rows: np.ndarray | None = None) -> list[ClassSuggestion]:
    """One suggestion per class of ``history`` (restricted to ``rows`` if given), classes by name.
    ``confidence`` grows with the number of jobs: low >= min_jobs, medium >= 3x, high >= 10x."""
    ratios = use_ratios(history)
    sel = np.ones(len(history), bool) if rows is None else rows
    out = []
    for i, name in enumerate(history.class_names):
        m = sel & (history.wclass == i)
        if not m.any():
            continue
        cpu, mem = (_one(res, ratios[res][m], params) for res in RESOURCES)
        out.append(ClassSuggestion(name, int(m.sum()), cpu, mem, _confidence(max(cpu.jobs, mem.jobs), params)))
    return sorted(out, key=lambda s: s.wclass)


def holdout(history: UsageHistory, params: RightsizeParams = RightsizeParams(),
            train_share: float = 0.7) -> dict[str, dict[str, float | int]]:
    """Suggest from the first ``train_share`` of jobs (by job id, i.e. submit order) and measure on the rest:
    per class and lowered resource, the share of later jobs whose use still fits within the factor
    (``fit``), out of ``jobs`` later jobs reporting that resource."""
    order = np.argsort(history.job_id, kind="stable")
    cut = int(len(order) * train_share)
    train = np.zeros(len(history), bool)
    train[order[:cut]] = True
    ratios = use_ratios(history)
    out: dict[str, dict[str, float | int]] = {}
    for s in suggest(history, params, train):
        i = history.class_names.index(s.wclass)
        for res in RESOURCES:
            if getattr(s, res).action != "lower":
                continue
            r = ratios[res][~train & (history.wclass == i)]
            r = r[np.isfinite(r)]
            if len(r):
                out[f"{s.wclass}/{res}"] = {"factor": s.factor(res), "jobs": int(len(r)),
                                            "fit": round(float(np.mean(r <= s.factor(res))), 4)}
    return out



def history_path(history: str, site_dir: Path) -> Path:
    """The site's ``policy.rightsize.history``: absolute as given, relative to the site file's folder."""
    path = Path(history).expanduser()
    return path if path.is_absolute() else site_dir / path


def apply_table(site, site_dir: Path) -> dict[str, ClassSuggestion]:
    """For the daemon: the suggestions admission applies under the site's ``policy.rightsize`` (``apply`` mode
    only, else empty): history (relative to ``site_dir``, the site file's folder) read once, restricted to
    ``classes`` (empty = every site class), classes with something to lower. Raises WorkloadError for an
    unreadable history (the daemon refuses to start)."""
    from ..workload.usage import load_usage

    rs = site.policy.rightsize
    if rs.mode != "apply":
        return {}
    params = RightsizeParams(percentile=rs.percentile, margin=rs.margin, min_jobs=rs.min_jobs,
                             min_saving=rs.min_saving)
    wanted = set(rs.classes or (c.name for c in site.policy.workload_classes))
    return {s.wclass: s for s in suggest(load_usage(history_path(rs.history, site_dir)), params)
            if s.wclass in wanted and "lower" in (s.cpus.action, s.memory.action)}
