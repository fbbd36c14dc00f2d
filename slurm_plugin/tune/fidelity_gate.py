"""The twin's fidelity gate (issue 22, item 4): before its prediction is trusted, the twin replays the history
under the policy the site actually ran and compares the simulated start times with the recorded ones.

Contract of :func:`check_history`:

- **Input**: the prepared history (:class:`~slurm_plugin.sim.run.Prepared`; its ``workload.recorded_wait``
  holds the recorded waits: SWF wait field, sacct Start - Submit, OpenB scheduled - created), the rankings the
  site may have run (each replayed on the whole history, in the site's backfill mode) and the thresholds.
- **Figures** (:func:`slurm_plugin.sim.fidelity.compare_starts`, the same code as ``hetsched sim fidelity``):
  Kendall tau-b of the start times, mean absolute wait error, recorded and simulated mean wait, over the jobs
  with a recorded wait. Also the Kendall tau-b of the *waits*: over months of history the start times follow
  the submit times, so tau of starts is high for any plausible replay; tau of waits is the stricter figure
  (reported, not gated on, since issue 22's threshold is on starts).
- **Which ranking**: when the site's ranking is not known (SWF: FCFS or a multifactor priority), every given
  ranking is replayed and the one whose replay is closest (fewest failed checks, then the smaller mean-wait
  error) stands for the site; the record names it.
- **Verdict**: passed when tau >= ``min_tau`` and the simulated mean wait is within ``wait_rel`` of the
  recorded one (:class:`~slurm_plugin.sim.fidelity.FidelityThresholds`' defaults: 0.9 and 10 %). A history
  with no recorded wait (synthetic, Gavel) or with compressed submit times cannot be checked: ``checked``
  is False and the reason says why (the caller decides; ``hetsched tune`` writes the policy and says so).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import kendalltau

from ..policy import RankingSpec
from ..sim.fidelity import FidelityThresholds, compare_starts
from ..sim.policy import sim_ranking
from ..sim.run import Prepared, simulate
from .candidates import label

MIN_JOBS = 10  # fewer recorded waits than this: not checked
_TH = FidelityThresholds()


@dataclass(frozen=True)
class GateThresholds:
    min_tau: float = _TH.min_tau
    wait_rel: float = _TH.wait_rel


@dataclass
class FidelityCheck:
    """The gate's record (also the policy file's ``twin.fidelity`` and the evaluation JSON's ``fidelity``)."""

    checked: bool
    passed: bool
    reason: str
    min_tau: float
    wait_rel: float
    jobs: int = 0
    replayed_as: str | None = None
    backfill: bool | None = None
    kendall_tau: float | None = None
    kendall_tau_wait: float | None = None
    mean_wait_real_s: float | None = None
    mean_wait_sim_s: float | None = None
    wait_mae_s: float | None = None
    forced: bool = False
    others: list[dict] | None = None  # the other rankings replayed, their figures

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def _figures(p: Prepared, spec: RankingSpec, backfill: bool, ids: np.ndarray, waits: np.ndarray,
             idx: np.ndarray) -> dict:
    rank = sim_ranking(spec, p.site, float(p.machine.cores))
    _, out = simulate(p, rank, backfill=backfill)
    jobs = p.workload.jobs
    ok = np.isfinite(out.begin[idx])
    idx, waits = idx[ok], waits[ok]
    real = [{"submit": s, "start": s + w} for s, w in zip(jobs.submit[idx].tolist(), waits.tolist())]
    t0 = float(jobs.submit[idx].min())
    got = compare_starts(real, out.begin[idx] - t0)
    sim_wait = out.begin[idx] - jobs.submit[idx]
    return {"ranking": label(spec), "jobs": got["jobs"], "kendall_tau": got["kendall_tau"],
            "kendall_tau_wait": float(kendalltau(waits, sim_wait).statistic),
            "mean_wait_real_s": got["real_avg_wait_s"], "mean_wait_sim_s": got["sim_avg_wait_s"],
            "wait_mae_s": got["wait_mae_s"], "unstarted": int((~ok).sum())}


def _fails(f: dict, th: GateThresholds) -> list[str]:
    out = []
    if not f["kendall_tau"] >= th.min_tau:
        out.append(f"Kendall tau-b of start times {f['kendall_tau']:.3f} < {th.min_tau:g}")
    real, sim = f["mean_wait_real_s"], f["mean_wait_sim_s"]
    off = abs(sim - real) / real if real > 0 else (0.0 if sim == 0 else float("inf"))
    if not off <= th.wait_rel:
        out.append(f"mean wait simulated {sim:.0f} s vs recorded {real:.0f} s (off by {off * 100:.1f} %, "
                   f"allowed {th.wait_rel * 100:g} %)")
    return out


def check_history(p: Prepared, rankings: list[RankingSpec], backfill: bool,
                  thresholds: GateThresholds | None = None) -> FidelityCheck:
    """Replay ``p`` under each of ``rankings`` and judge the closest (module docstring)."""
    th = thresholds or GateThresholds()
    base = dict(min_tau=th.min_tau, wait_rel=th.wait_rel, backfill=backfill)
    w = p.workload
    if w.compress != 1.0:
        return FidelityCheck(False, False, f"submit times compressed {w.compress:g}x: the recorded waits do not "
                                           "apply", **base)
    jobs = w.jobs
    ids = jobs.id.astype(np.int64)
    waits = np.array([w.recorded_wait.get(int(i), np.nan) for i in ids], dtype=float)
    idx = np.flatnonzero(np.isfinite(waits))
    if len(idx) < MIN_JOBS:
        return FidelityCheck(False, False, f"the history records no start times ({len(idx)} of {len(jobs)} jobs "
                                           "have a recorded wait): fidelity not checked", **base)
    if not rankings:
        raise ValueError("no ranking to replay the history with")
    figs = [_figures(p, spec, backfill, ids, waits[idx], idx) for spec in rankings]
    best = min(figs, key=lambda f: (len(_fails(f, th)), abs(f["mean_wait_sim_s"] - f["mean_wait_real_s"])))
    fails = _fails(best, th)
    mode = f"backfill {'on' if backfill else 'off'}"
    if fails:
        reason = (f"simulator below the fidelity threshold replaying {best['jobs']} recorded jobs under "
                  f"{best['ranking']} ({mode}): " + "; ".join(fails))
    else:
        reason = (f"fidelity met on {best['jobs']} recorded jobs under {best['ranking']} ({mode}): tau "
                  f"{best['kendall_tau']:.3f} >= {th.min_tau:g}, mean wait {best['mean_wait_sim_s']:.0f} s vs "
                  f"{best['mean_wait_real_s']:.0f} s within {th.wait_rel * 100:g} %")
    others = [{k: f[k] for k in ("ranking", "kendall_tau", "kendall_tau_wait", "mean_wait_sim_s", "wait_mae_s")}
              for f in figs if f is not best]
    return FidelityCheck(True, not fails, reason, jobs=best["jobs"], replayed_as=best["ranking"],
                         kendall_tau=best["kendall_tau"], kendall_tau_wait=best["kendall_tau_wait"],
                         mean_wait_real_s=best["mean_wait_real_s"], mean_wait_sim_s=best["mean_wait_sim_s"],
                         wait_mae_s=best["wait_mae_s"], others=others or None, **base)


RECORD_KEYS = ("jobs", "kendall_tau", "mean_wait_real_s", "mean_wait_sim_s")


def check_record(doc: object, source: str, thresholds: GateThresholds | None = None) -> FidelityCheck:
    """Judge a ``hetsched sim fidelity --json`` result (a replay on the real slurmctld against the simulator)
    by the same thresholds as the history (issue 22 item 4: "or this benchmark"). Raises ValueError naming
    ``source`` for a document that is not such a result."""
    th = thresholds or GateThresholds()
    if not isinstance(doc, dict) or any(not isinstance(doc.get(k), (int, float)) for k in RECORD_KEYS):
        raise ValueError(f"{source}: not a `hetsched sim fidelity` result (needs numbers {', '.join(RECORD_KEYS)})")
    fails = _fails(doc, th)
    version = doc.get("slurm_version") or "?"
    what = f"the fidelity record {source} ({doc['jobs']} jobs on Slurm {version})"
    reason = (f"simulator below the fidelity threshold on {what}: " + "; ".join(fails) if fails else
              f"fidelity met on {what}: tau {doc['kendall_tau']:.3f} >= {th.min_tau:g}")
    return FidelityCheck(True, not fails, reason, th.min_tau, th.wait_rel, jobs=int(doc["jobs"]),
                         kendall_tau=float(doc["kendall_tau"]), mean_wait_real_s=float(doc["mean_wait_real_s"]),
                         mean_wait_sim_s=float(doc["mean_wait_sim_s"]),
                         wait_mae_s=doc.get("wait_mae_s") if isinstance(doc.get("wait_mae_s"), (int, float))
                         else None)


def history_kind(path: str) -> str:
    """``sacct`` for an accounting export (the site's own Slurm ran it), ``trace`` for anything else."""
    from pathlib import Path

    from ..workload.openb import is_openb_pod_list

    name = path.lower()
    if name.endswith((".swf", ".swf.gz", ".trace")) or name.startswith(("synthetic", "lublin")):
        return "trace"
    if name.endswith(".csv") and Path(path).is_file() and is_openb_pod_list(path):
        return "trace"
    return "sacct"


def site_rankings(history_kind: str, names: tuple[str, ...] | None = None) -> list[RankingSpec]:
    """The rankings that stand for what the site ran: ``names`` when given; else an sacct export's site ran
    Slurm's multifactor priority (the site file's weights), and an SWF or other trace's is unknown: FCFS or
    multifactor (without the age floor: neither Slurm's default nor the archive's schedulers had one)."""
    if names:
        return [RankingSpec(name=n, age_floor=False) for n in names]
    if history_kind == "sacct":
        return [RankingSpec(name="multifactor", age_floor=False)]
    return [RankingSpec(name="fcfs", age_floor=False), RankingSpec(name="multifactor", age_floor=False)]
