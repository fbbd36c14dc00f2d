"""``hetsched tune``: choose a site's ranking by replaying its own job history in the simulator (the twin)."""

from __future__ import annotations

import logging
import math
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import click

from ..tune.select import BOUND_PRICE
from ..workload import WorkloadError
from .common import EXIT_USAGE, emit_json, fail, handle_errors
from .output import json_output_options, write_json

log = logging.getLogger(__name__)


def _history(path: str, site: str | None, drop_unfit: bool):
    """The history prepared for the simulator; a missing file or an unreadable format exits 2 naming it."""
    from ..sim.run import prepare

    if not path.startswith(("synthetic", "lublin:")) and not Path(path).is_file():
        fail(f"{path}: no such history file (want an sacct export: -P .txt/.psv/.sacct or --json .json; or SWF)",
             EXIT_USAGE)
    try:
        return prepare(path, site, drop_unfit=drop_unfit)
    except WorkloadError as err:
        fail(str(err), EXIT_USAGE)


def _power(result, procs: int | None, backfill: bool, every_timer: bool, halving: bool | None = None):
    """The power sweep (:func:`slurm_plugin.tune.power.tune_power`) on the whole history in the site's backfill
    mode, under the ranking chosen for that mode; None when the power module is missing. ``every_timer``: match
    every SuspendTime of the evaluation table (``--evaluate``); otherwise only the site's own, the only one whose
    outcome becomes the policy file's scaling section (:func:`.power.chosen_index`): 4-6 replays instead of 12-16.
    ``halving`` (``--halving/--no-halving``; None: by the tuning part's length) halves the power candidates too;
    in the evaluation (``every_timer``) the dropped ones are still replayed for their rows."""
    try:
        from ..tune.power import TIMER_SUSPEND_S, tune_power
    except ImportError:
        return None
    m = result.modes[backfill]
    return tune_power(result.twin.whole, result.twin.split, m.candidate(m.choice.winner).spec, jobs=procs,
                      backfill=backfill, timers=TIMER_SUSPEND_S if every_timer else (), halving=halving,
                      report_dropped=every_timer)


def _names(text: str | None, option: str = "--candidates") -> tuple[str, ...] | None:
    from ..tune.candidates import FIXED

    if text is None:
        return None
    names = tuple(n.strip().lower() for n in text.split(",") if n.strip())
    bad = [n for n in names if n not in FIXED]
    if bad or not names:
        raise click.BadParameter(f"unknown ranking(s) {', '.join(bad) or '(none given)'} (valid: {', '.join(FIXED)})",
                                 param_hint=option)
    return names


def _fidelity(p, path: str, site_ranking: str | None, backfill: bool, tau: float, wait: float):
    """The fidelity gate's check of the history (:mod:`slurm_plugin.tune.fidelity_gate`)."""
    from ..tune.fidelity_gate import GateThresholds, check_history, history_kind, site_rankings

    rankings = site_rankings(history_kind(path), _names(site_ranking, "--site-ranking"))
    return check_history(p, rankings, backfill, GateThresholds(min_tau=tau, wait_rel=wait))


def _fidelity_records(paths: tuple[Path, ...], tau: float, wait: float) -> list:
    """Each ``--fidelity-record`` judged by the gate's thresholds (a bad file is a usage error naming it)."""
    import json

    from ..tune.fidelity_gate import GateThresholds, check_record

    checks = []
    for path in paths:
        try:
            checks.append(check_record(json.loads(path.read_text()), str(path), GateThresholds(tau, wait)))
        except ValueError as err:  # JSONDecodeError is one
            raise click.BadParameter(str(err), param_hint="--fidelity-record") from None
        log.info("fidelity: %s", checks[-1].reason)
    return checks


def _incumbent(out: Path) -> str | None:
    """The label of the ranking in the policy file ``out`` is about to replace (the tie-break keeps it); None:
    no file there (the shipped default runs) or one that does not load (said in the log)."""
    if not out.exists():
        return None
    from ..policy import PolicyError, load_policy
    from ..tune.candidates import label

    try:
        return label(load_policy(out).ranking)
    except PolicyError as err:
        log.warning("incumbent: %s (the shipped default counts as the incumbent)", err)
        return None


@click.command("tune")
@click.option("--site", default=None, help="Site name or file (default: the machine the history names, e.g. an "
                                           "SWF header; an sacct export needs it).")
@click.option("--history", "history", default=None, metavar="FILE",
              help="The site's job history: sacct -P (.txt/.psv/.sacct) or --json (.json) export, or SWF.")
@click.option("--evaluate", "evaluate", default=None, metavar="TRACE",
              help="Evaluation protocol instead: tune on the first 70 %% of TRACE, report every fixed ranking and "
                   "the tuned one on the last 30 %%, backfill on and off.")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the tuned policy file here (atomically; the file there before is kept beside it and "
                   "named in twin.previous).")
@click.option("--explain", is_flag=True, help="Print the table of candidates and why the winner won.")
@click.option("-j", "--jobs", "procs", type=click.IntRange(min=1), default=None,
              help="Simulations at once (default: every core).")
@click.option("--backfill/--no-backfill", default=True, show_default=True,
              help="The backfill mode the site runs (the suite's slurm.conf: sched/backfill); the power sweep runs "
                   "in it (with --evaluate too, where the ranking is evaluated in both modes).")
@click.option("--floor-hours", type=click.FloatRange(min=0, min_open=True), default=24.0, show_default=True,
              help="The age floor of the candidates that have one.")
@click.option("--no-bound", is_flag=True, help="Drop the max-wait bound (age floor + longest time limit).")
@click.option("--bound-price", type=click.FloatRange(min=1.0), default=BOUND_PRICE, show_default=True,
              metavar="FACTOR",
              help="Drop the max-wait bound where keeping it costs more than FACTOR times the best objective (the "
                   "best within the bound over the best of all, on validation); inf: keep it at any price.")
@click.option("--power/--no-power", default=True, show_default=True,
              help="Also tune node power (idle timers vs the planner, slurm_plugin/tune/power.py) under the chosen "
                   "ranking; the policy file gets its scaling section and predicted energy.")
@click.option("--packing/--no-packing", "pack", default=True, show_default=True,
              help="Also sweep packing on/off under the chosen ranking (slurm_plugin/tune/packing.py; needs a site "
                   "whose node groups are the machine's, else the previous file's packing is kept and --explain "
                   "says why); the policy file gets packing.enabled and twin.packing.")
@click.option("--candidates", default=None, metavar="NAMES",
              help="Comma list of the fixed rankings to replay (default: all: fcfs,sjf,wfp3,unicep,f1,multifactor,"
                   "dqn); the weighted family is always searched.")
@click.option("--drop-unfit", is_flag=True, help="Drop (and report) jobs bigger than the machine.")
@click.option("--dqn-budget", type=click.FloatRange(min=0), default=300.0, show_default=True, metavar="SECONDS",
              help="CPU seconds to fine-tune the DQN on the history (a candidate; needs torch here or in "
                   "$HETSCHED_TORCH_PYTHON, else skipped with the reason); 0: off.")
@click.option("--site-ranking", default=None, metavar="NAMES",
              help="What the site ran, for the fidelity check (default: multifactor for an sacct export; fcfs,"
                   "multifactor for a trace: the closer replay stands for the site).")
@click.option("--fidelity-tau", type=click.FloatRange(-1, 1), default=0.9, show_default=True,
              help="Fidelity gate: the least Kendall tau-b of simulated vs recorded start times.")
@click.option("--fidelity-wait", type=click.FloatRange(min=0), default=0.10, show_default=True,
              help="Fidelity gate: the largest relative error of the simulated mean wait.")
@click.option("--fidelity-record", "fidelity_records", multiple=True, metavar="FILE",
              type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="A `hetsched sim fidelity --json` result (a replay on this site's real slurmctld) the simulator "
                   "must also pass, by the same thresholds (repeatable).")
@click.option("--force", is_flag=True,
              help="Write the policy file although the history's replay (or a --fidelity-record) is below the "
                   "fidelity threshold (recorded in twin.fidelity.forced).")
@click.option("--halving/--no-halving", "--race/--no-race", "race", default=None,
              help="Successive halving: replay every ranking on the first ninth of the tuning part, each family's "
                   "best third on the first third, only the survivors on all of it; the power candidates the same "
                   "way against the idle timers (default: on when the tuning part has 40,000 jobs or more, the ranking "
                   "sweep then dropping only what --budget-cpu-s requires; --halving forces every rung's cut; "
                   "--explain lists what each rung dropped and why; slurm_plugin/tune/sweep.py, tune/power.py).")
@click.option("--budget-cpu-s", "budget_cpu_s", type=click.FloatRange(min=0, min_open=True), default=1800.0,
              show_default=True, metavar="SECONDS",
              help="The whole tune's CPU budget (issue 13: 15 min on 2 cores). Unless --halving forces it, the "
                   "ranking sweep's halving plans on half of it: after each rung it extrapolates every remaining "
                   "candidate's replay to the whole tuning part (CPU ~ jobs^1.3) and drops nothing when all fit, "
                   "else only what does not fit (never fewer kept than the rung's cut); --explain says which.")
@click.option("--slurm", "slurm_array", is_flag=True,
              help="Run the replays as Slurm job arrays on the cluster SLURM_CONF names (the work directory, "
                   "$HETSCHED_ARRAY_DIR or the temp dir, must be visible from its nodes).")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --evaluate: write a bar chart of the held-back bounded slowdowns (PNG).")
@json_output_options
@handle_errors(WorkloadError, ValueError, OSError)
def tune(site, history, evaluate, out, explain, procs, backfill, floor_hours, no_bound, bound_price, power, pack,
         candidates, drop_unfit,
         dqn_budget, site_ranking, fidelity_tau, fidelity_wait, fidelity_records, force, race, budget_cpu_s, slurm_array,
         plot, as_json, output) -> None:
    """Choose the ranking by replaying the site's history (the twin); write it as a policy file."""
    from ..sim.parallel import on_slurm
    from ..sim.slurm_array import ArrayOptions

    click.get_current_context().with_resource(on_slurm(ArrayOptions() if slurm_array else None))
    from ..policy import PolicyError
    from ..tune import report
    from ..fsio import write_file_atomic
    from ..tune.candidates import Candidate
    from ..tune.finetuned import MODEL_NAME, finetuned_candidates
    from ..tune.tuner import tune_history

    if (history is None) == (evaluate is None):
        raise click.UsageError("give --history FILE (tune a site) or --evaluate TRACE (the evaluation protocol)")
    names = _names(candidates)
    path = evaluate or history
    p = _history(path, site, drop_unfit)
    modes = (True, False) if evaluate else (backfill,)
    records = _fidelity_records(fidelity_records, fidelity_tau, fidelity_wait)  # cheap: before the replays
    fid = _fidelity(p, path, site_ranking, backfill, fidelity_tau, fidelity_wait)
    log.info("fidelity: %s", fid.reason)
    refusal = fid.reason if fid.checked and not fid.passed else \
        next((r.reason for r in records if not r.passed), None)
    if out and refusal:
        if not force:
            fail(f"{path}: no policy file written: {refusal} (thresholds: --fidelity-tau {fidelity_tau:g}, "
                 f"--fidelity-wait {fidelity_wait:g}; --force writes it anyway)")
        fid.forced = True
        click.echo(f"hetsched: warning: --force: writing the policy although {refusal}", err=True)
    with tempfile.TemporaryDirectory(prefix="hetsched-tune-") as tmp:  # the fine-tuned model, unless kept
        workdir = Path(tmp)
        extra, note = finetuned_candidates(path, site, drop_unfit, 0.7, dqn_budget, workdir, floor_hours)
        log.info("%s", note)
        result = tune_history(p, modes, floor_hours=floor_hours, bounded=not no_bound, evaluate_all=bool(evaluate),
                              bound_price=None if math.isinf(bound_price) else bound_price,
                              jobs=procs, names=names, extra=extra, notes=[note], race=race, budget_cpu_s=budget_cpu_s,
                              incumbent=_incumbent(out) if out and not evaluate else None)
        if out and result.modes[backfill].choice.winner.startswith("dqn-finetuned"):
            kept = out.parent / time.strftime("dqn-finetuned-%Y%m%dT%H%M%SZ.npz", time.gmtime())
            write_file_atomic(kept, (workdir / MODEL_NAME).read_bytes())
            m = result.modes[backfill]
            m.candidates = [Candidate(replace(c.spec, model=str(kept.resolve())), c.family)
                            if c.family == "finetuned" else c for c in m.candidates]
        from ..tune import packing as packing_sweep

        pk = {bf: packing_sweep.tune_packing(result, bf, procs) if pack else
              packing_sweep.not_swept(result, bf, "--no-packing") for bf in modes}
        pt = _power(result, procs, backfill, bool(evaluate), race) if power else None
        if explain or not (as_json or output):
            click.echo(f"fidelity: {fid.reason}\n")
            click.echo(report.explain(result))
            click.echo("\n".join(line for k in pk.values() for line in packing_sweep.explain_lines(k)))
            if pt is not None:
                from ..tune.power_eval import summary

                click.echo(f"\npower (backfill {'on' if backfill else 'off'}, under the chosen ranking):\n" + summary(pt))
        if evaluate:
            note = None if pt is not None else "power not evaluated (--no-power)" if not power else \
                "power: slurm_plugin.tune.power is missing"
            doc = report.evaluation(result, [{**r, "backfill": backfill} for r in pt.rows()] if pt is not None else [],
                                    note)
            if pt is not None:
                doc["power_selection"] = {k: v for k, v in pt.as_dict().items() if k != "power"}
            from ..sim.run import provenance

            doc["fidelity"] = fid.as_dict()
            if records:
                doc["fidelity_records"] = [r.as_dict() for r in records]
            doc["packing"] = [r for k in pk.values() for r in packing_sweep.rows(k)]
            doc["packing_selection"] = {("on" if bf else "off"): packing_sweep.selection(k) for bf, k in pk.items()}
            doc["provenance"] = provenance()
            if explain or not (as_json or output):
                click.echo("".join(f"\nverdict, backfill {mode}: {v['text']}" for mode, v in doc["verdict"].items()))
            if plot:
                from ..tune.plots import plot_evaluation

                plot_evaluation(doc, plot)
        else:
            m = result.modes[backfill]
            pm = pk[backfill]
            twin = report.twin_section(result, path, backfill)
            twin["packing"] = packing_sweep.twin_packing(pm)
            twin["fidelity"] = report.fidelity_section(fid)
            if records:
                twin["fidelity"]["records"] = [report.fidelity_section(r) for r in records]
            if pt is not None:
                twin["predicted"]["energy_kwh"] = pt.test[pt.chosen].energy_kwh
            doc = {"chosen": m.choice.winner, "runner_up": m.choice.runner_up, "why": m.choice.why,
                   "twin": twin, "ranking": report.ranking_of(m), "halving": report.halving_doc(result),
                   "replay_cpu_s": dict(result.cpu)}
            doc["packing"] = {"backfill": backfill, "rows": packing_sweep.rows(pm), **packing_sweep.selection(pm)}
            if pt is not None:
                doc["power"] = {"backfill": backfill, **{k: v for k, v in pt.as_dict().items() if k != "power"}}
            if out:
                try:
                    written = report.write(out, m, twin, pt.scaling if pt is not None else None, pm.enabled)
                except PolicyError as err:
                    fail(str(err), EXIT_USAGE)
                doc["policy_file"] = str(written)
                key = twin["objective"]
                click.echo(f"wrote {written}: ranking {m.choice.winner} (predicted on the held-back part: {key} "
                           f"{twin['predicted'][key]:.4g}); packing "
                           f"{'kept from the previous file' if pm.enabled is None else 'on' if pm.enabled else 'off'}",
                           err=True)
    write_json(output, doc)
    if as_json:
        emit_json(doc)
