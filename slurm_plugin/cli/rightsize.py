"""``hetsched scale rightsize``: per-class CPU/memory suggestions from finished jobs' usage."""

from __future__ import annotations

from pathlib import Path

import click

from .common import emit_json, handle_errors


def from_site(site: str | None, history: Path | None, **given) -> tuple[RightsizeParams, Path]:
    """The site's ``policy.rightsize`` numbers and history (defaults without a site), overridden by those
    ``given``; raises ValueError when no history is named anywhere."""
    from ..scale.rightsize import RightsizeParams, history_path
    from ..site import load_site, resolve_site_path

    base: dict = {}
    if site:
        rs = load_site(site).policy.rightsize
        base = dict(percentile=rs.percentile, margin=rs.margin, min_jobs=rs.min_jobs, min_saving=rs.min_saving)
        history = history or (history_path(rs.history, resolve_site_path(site).parent) if rs.history else None)
    if history is None:
        raise ValueError("no history: give --history FILE (or a --site whose policy.rightsize names one)")
    base.update({k: v for k, v in given.items() if v is not None})
    return RightsizeParams(**base), history


def _fmt(s) -> str:
    return f"keep {s.factor:.0%}" if s.action == "lower" else s.action


@click.command("rightsize")
@click.option("--history", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Finished jobs: sacct -P / --json export (with TotalCPU, MaxRSS) or an SWF trace "
                   "(default: the site's policy.rightsize.history).")
@click.option("--site", help="Take history/percentile/margin/min_jobs/min_saving from the site's policy.rightsize.")
@click.option("--percentile", type=float, help="Percentile of past use to keep (default 95).")
@click.option("--margin", type=float, help="Safety margin on top of it (default 0.2).")
@click.option("--min-jobs", type=int, help="Jobs a class needs before any suggestion (default 30).")
@click.option("--min-saving", type=float, help="Smallest saving worth suggesting (default 0.25).")
@click.option("--min-elapsed", type=float, default=60.0, show_default=True, help="Ignore jobs shorter than this (s).")
@click.option("--holdout", "train_share", type=float, default=0.7, show_default=True,
              help="Also suggest from this first share of jobs and report how many later jobs still fit.")
@click.option("--json", "as_json", is_flag=True)
@handle_errors(ValueError, OSError)
def rightsize_cmd(history: Path | None, site: str | None, percentile, margin, min_jobs, min_saving,
                  min_elapsed: float, train_share: float, as_json: bool) -> None:
    """Suggest, per workload class, the share of its CPU and memory requests to keep (read-only; the daemon
    applies them only in the site's ``policy.rightsize.mode: apply``)."""
    from ..scale.rightsize import holdout, suggest
    from ..sim.run import provenance
    from ..workload.usage import load_usage

    params, history = from_site(site, history, percentile=percentile, margin=margin, min_jobs=min_jobs,
                                min_saving=min_saving)
    hist = load_usage(history, min_elapsed)
    suggestions = suggest(hist, params)
    checked = holdout(hist, params, train_share) if 0 < train_share < 1 else {}
    if as_json:
        emit_json({"history": str(history), "jobs": len(hist), "skipped": hist.skipped, "params": vars(params),
                   "classes": [s.to_json() for s in suggestions],
                   "holdout": {"train_share": train_share, "checks": checked}, "machine": provenance()})
        return
    click.echo(f"{history}: {len(hist)} finished jobs used; skipped: "
               + (", ".join(f"{n} {why}" for why, n in hist.skipped.items()) or "none"))
    click.echo(f"{'class':<22} {'jobs':>6} {'conf':<6} {'cpus':<12} {'memory':<12}")
    for s in suggestions:
        click.echo(f"{s.wclass:<22} {s.jobs:>6} {s.confidence:<6} {_fmt(s.cpus):<12} {_fmt(s.memory):<12}")
        for res in (s.cpus, s.memory):
            if res.action == "lower":
                click.echo(f"    {res.resource}: {res.reason}")
    for key, c in checked.items():
        click.echo(f"holdout {key}: keep {c['factor']:.0%} -> {c['fit']:.1%} of {c['jobs']} later jobs fit")
