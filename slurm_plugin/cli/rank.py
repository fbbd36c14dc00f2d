"""``hetsched rank``: train the DQN ranking in the simulator, evaluate it against the heuristics."""

from __future__ import annotations

import json
import logging
import shlex
import sys
from pathlib import Path

import click

from ..workload import WorkloadError
from .common import handle_errors
from .output import deliver, json_output_options

log = logging.getLogger(__name__)


@click.group("rank")
def rank() -> None:
    """Learned job ranking (DQN over 8 priority bands): train, evaluate."""


def _sources(workloads: tuple[str, ...], site: str | None):
    """One training Source per spec; ``SPEC@tune`` keeps only the spec's tuning part (its first 70 % of jobs
    by submit time, ``tune.split.split_history``), so its last 30 % stays held out."""
    from ..training.episodes import Source
    from ..sim.run import prepare
    from ..tune.split import split_history, tune_part
    out = []
    for spec in workloads:
        path, tune = (spec[:-5], True) if spec.endswith("@tune") else (spec, False)
        p = prepare(path, site if path.startswith("synthetic") else None)
        jobs = tune_part(p.workload.jobs, split_history(p.workload.jobs)) if tune else p.workload.jobs
        out.append(Source(p.workload.name + ("@tune" if tune else ""), p.machine, jobs))
    return out


def _command() -> str:
    return "hetsched " + shlex.join(sys.argv[1:]) if "rank" in sys.argv else shlex.join(sys.argv)


@rank.command("train")
@click.option("--site", default="demo", show_default=True, help="Site of the synthetic workloads.")
@click.option("--workload", "-w", "workloads", multiple=True, required=True,
              help="Training workload (repeatable): SWF file or synthetic:jobs=N,seed=S,load=L.")
@click.option("--val-workload", "val_workloads", multiple=True,
              help="Validation-only workload (repeatable): its val split takes part in checkpoint selection, "
                   "nothing of it is trained on.")
@click.option("--episodes", type=click.IntRange(1), default=300, show_default=True)
@click.option("--seq-len", type=click.IntRange(8), default=256, show_default=True)
@click.option("--price", type=float, default=3.0, show_default=True,
              help="Reward price per band level per hour of holding the whole machine.")
@click.option("--lr", type=float, default=3e-5, show_default=True, help="Adam learning rate of the DQN steps.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--eval-every", type=click.IntRange(1), default=5, show_default=True)
@click.option("--teacher-size", type=float, default=0.5, show_default=True,
              help="Warm-start teacher: log10 limit + this x log10 cores under load (0 = plain SJF).")
@click.option("--teacher-low", type=float, default=0.0, show_default=True,
              help="Teacher below the backlog, for jobs only some node groups can run: log10 limit - this x "
                   "log10 cores (big first); > 0 also lets the model's bands act on those jobs below the gate.")
@click.option("--val-seqs", type=click.IntRange(1), default=48, show_default=True,
              help="Validation sequences per workload at each evaluation.")
@click.option("--train-frac", type=click.FloatRange(0.1, 0.95), default=0.6, show_default=True,
              help="Train on this first share of each workload's jobs, validate on the next --val-frac.")
@click.option("--val-frac", type=click.FloatRange(0.01, 0.5), default=0.1, show_default=True)
@click.option("--budget-s", type=click.FloatRange(1.0), default=None,
              help="Stop training after this many seconds (the last checkpoint is evaluated; not repeatable).")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="Model file (.npz).")
@handle_errors(WorkloadError, ValueError, OSError, ImportError)
def train_cmd(site, workloads, val_workloads, episodes, seq_len, price, lr, seed, eval_every, teacher_size,
              teacher_low, val_seqs, train_frac, val_frac, budget_s, out) -> None:
    """Double DQN in the simulator on the train split (first 60 %) of each workload; keeps the checkpoint with
    the smallest worst validation bsld / SJF's (next 10 % of each workload and of each --val-workload). A
    workload ``SPEC@tune`` is cut to its first 70 % first (its last 30 % stays held out). Needs torch
    (pip install -e '.[train]')."""
    import time

    from tqdm import tqdm

    from ..rank.dqn.model import save_model
    from ..training.train import TrainConfig, train
    from ..sim.run import provenance
    if train_frac + val_frac > 1.0 + 1e-9:
        raise click.BadParameter(f"--train-frac {train_frac:g} + --val-frac {val_frac:g} exceed 1")
    srcs = _sources(workloads, site)
    cfg = TrainConfig(episodes=episodes, seq_len=seq_len, price=price, lr=lr, seed=seed, eval_every=eval_every,
                      teacher_size=teacher_size, teacher_low=teacher_low, val_seqs=val_seqs,
                      train_part=(0.0, train_frac), val_part=(train_frac, min(train_frac + val_frac, 1.0)))
    deadline = time.monotonic() + budget_s if budget_s else None
    with tqdm(total=episodes, desc="dqn train", unit="episode", file=sys.stderr) as bar:
        model, _ = train(srcs, cfg, bar.update, tuple(_sources(val_workloads, site)), deadline=deadline)
    import torch
    model.meta.update(workloads=list(workloads), val_workloads=list(val_workloads), site=site, seed=seed,
                      command=_command(), uses_scarcity=True,
                      torch=torch.__version__, provenance=provenance())
    save_model(model, out)
    click.echo(f"wrote {out} ({Path(out).stat().st_size} bytes): best validation bsld "
               f"/ SJF's {model.meta['val_bsld_over_sjf']:.3f} at episode {model.meta['best_episode']}, "
               f"{model.meta['train_wall_s']:.0f} s")


@rank.command("eval")
@click.option("--workload", "-w", required=True, help="SWF file, sacct export, or synthetic:... (with --site).")
@click.option("--site", default=None, help="Site (synthetic workloads; default: the SWF header's machine).")
@click.option("--model", "model_path", default=None, type=click.Path(dir_okay=False),
              help="DQN model (default: the shipped one).")
@click.option("--semantics", type=click.Choice(["slurm", "rlscheduler"]), default="slurm", show_default=True)
@click.option("--sequences", "count", type=click.IntRange(1), default=50, show_default=True)
@click.option("--length", type=click.IntRange(8), default=256, show_default=True)
@click.option("--split", "part", type=click.Choice(["test", "val", "all"]), default="test", show_default=True,
              help="Where sequences come from: test = last 30 % of the jobs (never trained on).")
@click.option("--windows", is_flag=True,
              help="RLScheduler's windows instead: --sequences windows of --length jobs at their seeded starts.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--age-floor", "floor_h", type=float, default=None,
              help="Also run every policy under this age floor (hours): 'floor_rows'.")
@json_output_options
@click.option("--plot", "plot_out", default=None, type=click.Path(dir_okay=False), help="PNG: bsld and max wait.")
@click.option("--jobs", "-j", "njobs", type=click.IntRange(1), default=None,
              help="Simulations at once, each in its own process (default: every core); -v logs each run.")
@handle_errors(WorkloadError, ValueError, OSError)
def eval_cmd(workload, site, model_path, semantics, count, length, part, windows, seed, floor_h, as_json, output,
             plot_out, njobs) -> None:
    """DQN vs FCFS, SJF, WFP3, UNICEP, F1, multifactor, with and without backfill, on held-out sequences."""
    from ..training.evaluate import BASELINES, compare_rows, protocol_sequences
    from ..rank.dqn.model import DEFAULT_MODEL
    from ..rank.dqn.policy import AgeFloor, dqn_ranking
    from ..rank.dqn.report import plot_rows, table
    from ..sim.hooks import ranking
    from ..sim.run import prepare, provenance
    p = prepare(workload, site)
    total = float(p.machine.cores)
    seqs = protocol_sequences(p.workload.jobs, windows, count, length, part, seed)
    pols = {"dqn": dqn_ranking(p.site, total, model_path)}
    pols.update({b: ranking(b, p.site, total) for b in BASELINES})
    say = lambda r: log.info("%s bf=%s bsld %.2f", r["policy"], r["backfill"], r["avg_bsld"])  # noqa: E731
    each = lambda bf, pol, i, r: log.info("%s bf=%s sequence %d: bsld %.2f", pol, bf, i, r["avg_bsld"])  # noqa: E731
    rows = compare_rows(p.workload.name, p.machine, seqs, pols, semantics, on_row=say, jobs=njobs, on_run=each)
    out = {"protocol": {"semantics": semantics, "sequences": len(seqs), "length": length,
                        "source": "rlscheduler-windows" if windows else f"split:{part}", "seed": seed,
                        "bsld_threshold_s": 10.0, "model": str(model_path or DEFAULT_MODEL),
                        "command": _command(), "provenance": provenance()}, "rows": rows}
    if floor_h is not None:
        floored = {k: AgeFloor(v, floor_h * 3600.0) for k, v in pols.items()}
        out["floor_rows"] = [{**r, "age_floor_h": floor_h}
                             for r in compare_rows(p.workload.name, p.machine, seqs, floored, semantics, (True,), say,
                                                   jobs=njobs, on_run=each)]
    if plot_out:
        plot_rows(rows + out.get("floor_rows", []), plot_out, f"{p.workload.name} ({semantics}, {len(seqs)} seq)")
    deliver(out, as_json, output, lambda: click.echo(table(rows + out.get("floor_rows", []))))


@rank.command("record")
@click.option("--model", "model_path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@handle_errors(ValueError, OSError)
def record_cmd(model_path, results) -> None:
    """Store the evaluation figures of RESULTS (``rank eval`` JSON files) in the model's metadata (weights
    unchanged): per file, its protocol and the avg_bsld / max_wait_s of every row."""
    from ..rank.dqn.model import load_model, save_model
    model = load_model(model_path)
    evals = model.meta.setdefault("evaluations", {})
    for path in results:
        doc = json.loads(Path(path).read_text())
        p = doc["protocol"]
        evals[Path(path).stem] = {
            "semantics": p["semantics"], "source": p["source"], "sequences": p["sequences"], "length": p["length"],
            "rows": [{k: r[k] for k in ("workload", "policy", "backfill", "avg_bsld", "max_wait_s")} | (
                {"age_floor_h": r["age_floor_h"]} if "age_floor_h" in r else {})
                for r in doc["rows"] + doc.get("floor_rows", [])]}
    save_model(model, model_path)
    click.echo(f"recorded {len(results)} evaluation(s) in {model_path}")


@rank.command("heldout")
@click.option("--workload", "-w", "workloads", multiple=True, required=True,
              help="Workload (repeatable): SWF file, lublin:..., or synthetic:... (with --site).")
@click.option("--site", default="demo", show_default=True, help="Site of the synthetic workloads.")
@click.option("--model", "models", multiple=True, metavar="NAME=PATH",
              help="A DQN model to compare (repeatable; default: dqn=the shipped one).")
@click.option("--policy", "heuristics", multiple=True, default=("sjf", "f1", "wfp3", "fcfs"), show_default=True,
              help="Heuristic rankings to compare (repeatable).")
@click.option("--warmup", type=click.IntRange(0), default=1000, show_default=True,
              help="Tuning jobs simulated (unscored) before the held-back part.")
@click.option("--max-test-jobs", type=click.IntRange(1), default=None,
              help="Score only the first N held-back jobs (default: all of the last 30 %).")
@click.option("--fine-tune-s", type=click.FloatRange(1.0), default=None,
              help="Also fine-tune the first --model on each workload's tuning part (first 70 %) within this "
                   "many seconds and compare it as 'NAME-ft' (needs torch).")
@click.option("--seed", type=int, default=1, show_default=True, help="Fine-tuning seed.")
@json_output_options
@click.option("--plot", "plot_out", default=None, type=click.Path(dir_okay=False),
              help="PNG: each policy's bsld / SJF's per workload.")
@handle_errors(WorkloadError, ValueError, OSError, ImportError)
def heldout_cmd(workloads, site, models, heuristics, warmup, max_test_jobs, fine_tune_s, seed, as_json, output,
                plot_out) -> None:
    """DQN model(s) vs heuristics on each workload's held-back last 30 % (by submit time), simulated whole after
    a warm-up, backfill on and off; a markdown table on stdout."""
    from ..rank.dqn.model import DEFAULT_MODEL, load_model
    from ..rank.dqn.policy import DqnRanking
    from ..rank.dqn.report import heldout_table, plot_ratios
    from ..sim.hooks import ranking
    from ..sim.run import prepare, provenance
    from ..training.heldout import held_back_rows, versus_best
    named = dict(m.split("=", 1) for m in models) if models else {"dqn": str(DEFAULT_MODEL)}
    loaded = {k: load_model(v) for k, v in named.items()}
    rows, fine_tuned = [], {}
    for spec in workloads:
        p = prepare(spec, site if spec.startswith("synthetic") else None)
        total = float(p.machine.cores)
        max_qos = None
        if p.site is not None:
            max_qos = float(max([q.priority for q in p.site.policy.qos_tiers] or [0])) or None
        pols = {k: DqnRanking(m, total, max_qos, name=k) for k, m in loaded.items()}
        if fine_tune_s:
            from ..training.finetune import fine_tune
            from ..tune.split import split_history, tune_part
            first = next(iter(named))
            jobs = p.workload.jobs
            ft = fine_tune(named[first], tune_part(jobs, split_history(jobs)), p.machine, fine_tune_s, seed)
            log.info("%s: fine-tuned %s: %s", spec, first, ft.meta["fine_tune"])
            fine_tuned[spec] = ft.meta["fine_tune"]
            pols[f"{first}-ft"] = DqnRanking(ft, total, max_qos, name=f"{first}-ft")
        pols.update({h: ranking(h, p.site, total) for h in heuristics})
        say = lambda r: log.info("%s %s bf=%s bsld %.2f", r["workload"], r["policy"], r["backfill"],  # noqa: E731
                                 r["avg_bsld"])
        rows += held_back_rows(spec, p.machine, p.workload.jobs, pols, warmup=warmup, max_test_jobs=max_test_jobs,
                               on_row=say)
    learned = list(dict.fromkeys(r["policy"] for r in rows if r["policy"] not in heuristics))
    summary = [s for k in learned for s in versus_best(rows, k, tuple(heuristics))]
    out = {"protocol": {"split": "tune.split.split_history 70/30 by submit time", "warmup_jobs": warmup,
                        "max_test_jobs": max_test_jobs, "semantics": "slurm", "bsld_threshold_s": 10.0,
                        "models": named, "command": _command(), "provenance": provenance()},
           "rows": rows, "versus_best_heuristic": summary, "fine_tuned": fine_tuned}
    if plot_out:
        plot_ratios(rows, plot_out, "held-back 30 %: avg bsld / SJF's")
    deliver(out, as_json, output, lambda: click.echo(heldout_table(rows, summary)))
