"""What the tuner shows and writes: the ``--explain`` table, the evaluation JSON (issue 13's format) and the
policy file's ``twin:`` section."""

from __future__ import annotations

import math
import time
from pathlib import Path

from .policyfile import sha256_of
from .score import Score
from .select import STRESS_LOAD
from .sweep import ETA, GROWTH, KEEP, MARGIN
from .tuner import ModeResult, TuneResult
from .verdict import WITHIN, judge_evaluation


def _f(v: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if v is None else fmt.format(v)


def explain(result: TuneResult) -> str:
    """The candidates of each mode with their validation and held-back metrics, and why the winner won."""
    t = result.twin
    lines = [f"history: {t.whole.workload.name}: {t.split.jobs} jobs; tuning part {t.split.tune_jobs} "
             f"(rolling-origin validation: {t.folds} blocks after the first {t.inner.tune_jobs} jobs, cut at jobs "
             f"{', '.join(map(str, t.origins))}), held back {t.split.test_jobs}; objective {t.objective}; max-wait "
             f"bound {_f(result.bound_s, '{:.0f} s') if result.bound_s is not None else 'none'}"
             + (f" (dropped where keeping it costs over {result.bound_price:g}x the best objective)"
                if result.bound_s is not None and result.bound_price is not None else "")]
    lines += [f"note: {n}" for n in result.notes]
    if result.cpu:
        phases = "; ".join(f"{k} {v:.1f}" for k, v in result.cpu.items())
        lines.append(f"replay CPU s by phase (every process): {phases}; total {sum(result.cpu.values()):.1f}")
    lines += halving_lines(result)
    for bf, m in result.modes.items():
        lines += ["", f"backfill {'on' if bf else 'off'}: weighted family fitted before each block: "
                      f"{', '.join(m.fitted_at)}; on the whole tuning part (deployed): {m.fitted}",
                  "| candidate | validation objective (mean of blocks) | per block | validation max wait s |"
                  " within bound | held-back avg bsld | held-back avg wait s | held-back max wait s | note |",
                  "|" + "---|" * 9]
        for lab, e in sorted(m.entries.items(), key=lambda kv: kv[1].objective):
            te = m.test_scores.get(lab)
            note = "WINNER" if lab == m.choice.winner else "runner-up" if lab == m.choice.runner_up else ""
            if lab in m.choice.tied and lab != m.choice.winner:
                note = (note + " tied").strip()
            if lab == result.default_label:
                note = (note + " (shipped default)").strip()
            lines.append(f"| {lab} | {e.objective:.2f} | {' / '.join(f'{b:.3g}' for b in e.blocks)} | "
                         f"{e.max_wait_s:.0f} | {'yes' if lab in m.choice.feasible else 'no'} | "
                         f"{_f(te and te.avg_bsld)} | {_f(te and te.avg_wait_s, '{:.0f}')} | "
                         f"{_f(te and te.max_wait_s, '{:.0f}')} | {note} |")
        if m.stressed:
            lines.append(f"tie-break at raised load (arrivals compressed {result.stress_factor:.3g}x): "
                         + ", ".join(f"{lab} {e.objective:.3g}" for lab, e in
                                     sorted(m.stressed.items(), key=lambda kv: kv[1].objective)))
        lines.append(f"winner {m.choice.winner}: {m.choice.why}")
    return "\n".join(lines)


def halving_lines(result: TuneResult) -> list[str]:
    """The successive halving's rungs and every candidate it dropped, with the rung and why (empty: none ran)."""
    h = result.halving
    if h is None:
        return []
    rungs = ", ".join(f"rung {r + 1}: the first {jobs} jobs ({share:.0%}), {n} replays"
                      for r, (share, jobs, n) in enumerate(h.rungs))
    out = ["", f"successive halving ({rungs}; then the whole tuning part): each family (fixed / weighted grid) "
               f"kept its best 1/{ETA}, at least {KEEP}, and any within {MARGIN:.0%} of its best, per backfill mode"]
    out.append(budget_line(h))
    g = h.growth_measured()
    if g:
        out.append(f"replay CPU growth measured (rung 1 -> the whole tuning part, {len(g)} candidates): jobs^a with a "
                   f"median {sorted(g)[len(g) // 2]:.2f}, max {max(g):.2f} (the estimate assumed {GROWTH:g})")
    if h.dropped:
        out += ["| backfill | rung | candidate | objective on the rung | max wait s | family's best | why dropped |",
                "|" + "---|" * 7]
        out += [f"| {'on' if d.backfill else 'off'} | {d.rung + 1} ({d.jobs} jobs) | {d.label} | {d.objective:.4g} | "
                f"{d.max_wait_s:.0f} | {d.best} {d.best_objective:.4g} | {d.reason} |" for d in h.dropped]
    return out


def budget_line(h) -> str:
    """What the budget rule decided (the last rung it ran on), or that the halving was forced."""
    if h.budget_s is None:
        return "budget rule not applied (--halving forced the cut at every rung)"
    return h.decisions[-1].text() if h.decisions else "budget rule: no rung ran"


def halving_doc(result: TuneResult) -> dict | None:
    h = result.halving
    if h is None:
        return None
    g = h.growth_measured()
    return {
        "rungs": [{"share": share, "jobs": jobs, "replays": n} for share, jobs, n in h.rungs],
        "kept": {("on" if bf else "off"): [c.label for c in cands] for bf, cands in h.kept.items()},
        "dropped": [d.as_dict() for d in h.dropped],
        "budget_cpu_s": h.budget_s, "budget": [d.as_dict() for d in h.decisions], "text": budget_line(h),
        "growth_assumed": GROWTH,
        "growth_measured": {"candidates": len(g), "median": sorted(g)[len(g) // 2], "max": max(g)} if g else None,
        "replay_cpu_s": [{"label": lab, "backfill": bf, "rung": r + 1, "cpu_s": c} for (lab, bf, r), c in h.cpu.items()]
        + [{"label": lab, "backfill": bf, "rung": "tuning part", "cpu_s": c} for (lab, bf), c in h.full_cpu.items()]}


def _row(m: ModeResult, lab: str, s: Score, default_label: str) -> dict:
    c = m.candidate(lab)
    return {"policy": lab, "backfill": m.backfill, "avg_bsld": s.avg_bsld, "avg_wait_s": s.avg_wait_s,
            "max_wait_s": s.max_wait_s, "chosen": lab == m.choice.winner, "family": c.family,
            "shipped_default": lab == default_label, "ranking": _spec_dict(c)}


def _spec_dict(c) -> dict:
    from .policyfile import ranking_section

    return ranking_section(c.spec)


def evaluation(result: TuneResult, power: list[dict] | None = None, power_note: str | None = None) -> dict:
    """Issue 13's results JSON: every replayed ranking on the held-back part, per backfill mode."""
    ranking = []
    for m in result.modes.values():
        for c in m.candidates:
            if c.label in m.test_scores:
                ranking.append(_row(m, c.label, m.test_scores[c.label], result.default_label))
    t = result.twin
    doc = {"ranking": ranking, "power": power or [],
           "split": {"tune_jobs": t.split.tune_jobs, "test_jobs": t.split.test_jobs, "cut_time": t.split.cut_time,
                     "rolling_origins": t.origins, "validation_blocks": t.folds},
           "objective": t.objective, "max_wait_bound_s": result.bound_s, "bound_price": result.bound_price,
           "workload": t.whole.workload.name,
           "machine": t.whole.machine.name, "dropped_unfit": len(t.whole.workload.dropped),
           "selection": {("on" if bf else "off"): {"winner": m.choice.winner, "runner_up": m.choice.runner_up,
                                                   "best_on_validation": m.choice.best, "tied": list(m.choice.tied),
                                                   "fitted": m.fitted, "fitted_at": m.fitted_at,
                                                   "why": m.choice.why, "decided_by": m.choice.decided_by,
                                                   "stress_tied": list(m.choice.stress_tied),
                                                   "stressed": {lab: {"objective": e.objective,
                                                                      "blocks": list(e.blocks),
                                                                      "block_max_wait_s": list(e.block_max_wait)}
                                                                for lab, e in m.stressed.items()},
                                                   "validation": {lab: {"objective": e.objective,
                                                                        "blocks": list(e.blocks),
                                                                        "block_max_wait_s": list(e.block_max_wait)}
                                                                  for lab, e in m.entries.items()}}
                         for bf, m in result.modes.items()},
           "stress_factor": result.stress_factor, "incumbent": result.incumbent,
           "rule": "rolling-origin: best mean objective over the validation blocks, max-wait bound per block"
                   + (f" unless keeping it costs over {result.bound_price:g}x the best objective; "
                      if result.bound_price is not None else "; ") +
                   "ties (1 SE, and 1 % or the best ahead in at most half of the blocks: the consistency clause) "
                   "to the one ahead at raised load (arrivals compressed to offered load "
                   f"{STRESS_LOAD:g}), else the incumbent, else the simpler"}
    doc["verdict"] = {mode: v.as_dict() for mode, v in judge_evaluation(doc).items()}
    doc["halving"] = halving_doc(result)
    doc["replay_cpu_s"] = dict(result.cpu)
    if result.notes:
        doc["notes"] = list(result.notes)
    if power_note:
        doc["power_note"] = power_note
    return doc


def _predicted(s: Score) -> dict:
    return {"avg_bsld": s.avg_bsld, "avg_wait_s": s.avg_wait_s, "max_wait_s": s.max_wait_s}


def twin_section(result: TuneResult, history: str | Path, backfill: bool = True, now: float | None = None) -> dict:
    """The policy file's ``twin:`` section for the mode ``backfill`` (PREAMBLE's contract)."""
    m = result.modes[backfill]
    jobs = result.twin.whole.workload.jobs
    doc = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now if now is not None else time.time())),
        "history": {"path": str(Path(history).resolve()) if Path(history).is_file() else str(history),
                    "jobs": len(jobs), "start": float(jobs.submit.min()), "end": float(jobs.submit.max())},
        "objective": "avg_bsld" if result.twin.objective == "avg_bsld" else "avg_wait_s",
        "predicted": _predicted(m.test_scores[m.choice.winner]),
        "why": m.choice.why,
    }
    if Path(history).is_file():
        doc["history"]["sha256"] = sha256_of(history)
    if m.choice.runner_up:
        r = m.candidate(m.choice.runner_up)
        doc["runner_up"] = {"ranking": r.label, "backfill": backfill,
                            "predicted": _predicted(m.test_scores[m.choice.runner_up])}
    return doc


def fidelity_section(check) -> dict:
    """The policy file's ``twin.fidelity`` (:class:`slurm_plugin.policy.twin.TwinFidelity`'s keys) from a
    :class:`.fidelity_gate.FidelityCheck`."""
    keys = ("checked", "passed", "forced", "reason", "replayed_as", "jobs", "kendall_tau", "kendall_tau_wait",
            "mean_wait_real_s", "mean_wait_sim_s", "wait_mae_s", "min_tau", "wait_rel")
    return {k: v for k, v in check.as_dict().items()  # a NaN tau (constant waits) is left out: the file is strict
            if k in keys and not (isinstance(v, float) and not math.isfinite(v))}


def ranking_of(m: ModeResult) -> dict:
    """The chosen ranking as the policy file writes it."""
    return _spec_dict(m.candidate(m.choice.winner))


def write(path: str | Path, m: ModeResult, twin: dict, scaling=None, packing: bool | None = None) -> Path:
    """Write the policy file for the mode ``m`` (:func:`.policyfile.write_policy`); ``scaling`` (a ScalingSpec,
    from the power tuner) replaces the previous file's scaling section, ``packing`` (the packing sweep's choice;
    None: not swept) its ``packing.enabled``."""
    from .policyfile import write_policy

    return write_policy(path, m.candidate(m.choice.winner).spec, twin, scaling, packing)


def summary(docs: list[dict]) -> str:
    """Markdown: per trace and backfill mode, the tuned choice against the best fixed candidate that keeps the
    max-wait bound on the held-back part (:mod:`.verdict`: the fair comparison; the unconstrained best beside it,
    and plainly when no fixed heuristic keeps the bound), the shipped default, and a count of the verdicts."""
    lines = ["| trace | backfill | tuned choice | tuned avg bsld | tuned max wait s | judged against | its avg bsld | "
             "tuned vs it | verdict | best fixed regardless of the bound (avg bsld, max wait s) | "
             "shipped default avg bsld |", "|" + "---|" * 11]
    counts = {"better": 0, "tie": 0, "WORSE": 0}
    for doc in (d for d in docs if isinstance(d.get("ranking"), list)):  # evaluation documents only
        for mode, v in judge_evaluation(doc).items():
            rows = [r for r in doc["ranking"] if r["backfill"] == (mode == "on")]
            default = next((r for r in rows if r.get("shipped_default")), None)
            against = (f"{v.comparator.policy} (best of {v.within}/{v.fixed} within the bound {v.bound_s:.0f} s)"
                       if v.basis == WITHIN else f"{v.comparator.policy} ({v.basis}"
                       + (f" {v.bound_s:.0f} s)" if v.bound_s is not None else ")"))
            over = " (over the bound)" if v.tuned_within_bound is False else ""
            u = v.unconstrained
            counts[v.verdict] += 1
            lines.append(f"| {doc.get('workload')} | {mode} | {v.tuned.policy} | {v.tuned.avg_bsld:.2f} | "
                         f"{v.tuned.max_wait_s:.0f}{over} | {against} | {v.comparator.avg_bsld:.2f} | "
                         f"{v.gain_pct:+.1f} % | {v.verdict} | {u.policy} ({u.avg_bsld:.2f}, {u.max_wait_s:.0f}) | "
                         f"{_f(default and default['avg_bsld'])} |")
    lines += ["", f"{sum(counts.values())} cells: {counts['better']} better, {counts['tie']} tie, "
                  f"{counts['WORSE']} WORSE (against the best fixed heuristic within the held-back max-wait bound)"]
    return "\n".join(lines)
