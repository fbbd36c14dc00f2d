"""The power half of the evaluation protocol (issue 13, item 5) for one trace: split the history 70/30, run every
power candidate (:func:`.power.tune_power`: the choice is made on the first 70 % alone, the last 30 % is only
reported), write the JSON and the energy-vs-wait plot.

``python3 -m slurm_plugin.tune.power_eval TRACE [--site S] [--json F] [--plot P] [--jobs N] [--cache DIR]``
(``--table F.json ...``: each result as a markdown table); an SWF trace
without ``--site`` runs on its header's machine with the documented default watts and boot times
(``slurm_plugin/sim/machine.py: SWF_NODE_POWER``), as ``hetsched scale eval`` does.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from ..fsio import write_file_atomic
from .power import PowerTuning, tune_power
from .split import split_history


def evaluate(trace: str, site: str | None = None, ranking: str = "fcfs", jobs: int | None = None,
             tune_fraction: float = 0.7, suspend_time_s: float | None = None,
             cache: Path | None = None, prices: tuple[float, ...] | None = None,
             timers: tuple[float, ...] | None = None, prepared=None,
             halving: bool | None = None) -> tuple[PowerTuning, dict]:
    """The result and its JSON document (with the trace, machine and provenance); ``prepared``: the trace
    already prepared (:func:`slurm_plugin.sim.run.prepare`); ``halving`` as :func:`.power.tune_power`'s (the
    candidates it drops are still replayed for their rows: the evaluation reports every one)."""
    from ..sim.run import prepare, provenance

    prepared = prepared or prepare(trace, site)
    split = split_history(prepared.workload.jobs, tune_fraction)
    t0 = time.perf_counter()
    bar = _Progress()
    kw = {k: v for k, v in (("prices", prices), ("timers", timers)) if v is not None}
    result = tune_power(prepared, split, ranking, jobs=jobs, progress=bar, suspend_time_s=suspend_time_s,
                        cache=cache, halving=halving, report_dropped=True, **kw)
    g = prepared.machine.groups
    doc = {"trace": trace, "site": site, "ranking": ranking, "backfill": True,
           "machine": {"name": prepared.machine.name, "groups": [
               {"name": x.name, "count": x.count, "cores": x.cores, "arch": x.arch, "idle_w": x.idle_w,
                "busy_w": x.busy_w, "off_w": x.off_w, "boot_s": x.boot_s} for x in g]},
           **result.as_dict(), "wall_s": time.perf_counter() - t0, **provenance()}
    return result, doc


class _Progress:
    def __call__(self, done: int, total: int) -> None:
        logging.getLogger(__name__).info("power candidates: %d/%d done", done, total)


def plot(result: PowerTuning, title: str, path: Path) -> None:
    """Energy vs average wait on the tuning part (where the choice is made) and on the held-back part (reported
    only): the timer's curve, the other candidates' points, each timer's pick joined to its timer by a dotted
    line, the chosen setting ringed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    styles = {"planner": ("s", "tab:orange"), "planner+arch": ("D", "tab:red"), "matched-timer": ("o", "tab:green")}
    for ax, parts, name in ((axes[0], result.tune, "tuning part"), (axes[1], result.test, "held-back part")):
        timers = [(c.scaling.suspend_time_s, parts[i]) for i, c in enumerate(result.candidates) if c.is_timer]
        timers.sort()
        ax.plot([p.avg_wait_s for _, p in timers], [p.energy_kwh for _, p in timers], "-^", color="tab:blue",
                label="Slurm idle timer")
        for t, p in timers:
            ax.annotate(f"{t:g} s", (p.avg_wait_s, p.energy_kwh), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        seen = set()
        for i, c in enumerate(result.candidates):
            if c.is_timer or parts[i] is None:
                continue
            marker, color = styles.get(c.policy, ("x", "gray"))
            ax.plot(parts[i].avg_wait_s, parts[i].energy_kwh, marker, color=color, ms=5, alpha=0.8,
                    label=None if c.policy in seen else c.policy)
            seen.add(c.policy)
        for m in result.matches:
            if m.pick is not None:
                a, b = parts[m.timer], parts[m.pick]
                ax.plot([a.avg_wait_s, b.avg_wait_s], [a.energy_kwh, b.energy_kwh], ":", color="black", lw=0.8)
        ch = parts[result.chosen]
        ax.plot(ch.avg_wait_s, ch.energy_kwh, "o", ms=14, mfc="none", mec="black",
                label=f"chosen ({result.candidates[result.chosen].param})")
        ax.set_xlabel("average wait (s)")
        ax.set_ylabel("energy (kWh)")
        ax.set_title(f"{name} ({parts[0].jobs} jobs)", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(title + "\n(chosen on the tuning part only; dotted: each timer's pick)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def summary(result: PowerTuning) -> str:
    """One line per timer setting."""
    lines = []
    for m in result.matches:
        held = "" if m.held_back_dominates is None else \
            f" [held-back: {'dominates' if m.held_back_dominates else 'does not dominate'}]"
        lines.append(f"SuspendTime {m.suspend_time_s:6g} s: {m.outcome:7}{held} {m.reason}")
    c = result.candidates[result.chosen]
    lines.append(f"chosen (site's SuspendTime {result.suspend_time_s:g} s): {c.policy} {c.param}")
    return "\n".join(lines + halving_lines(result))


def halving_lines(result: PowerTuning) -> list[str]:
    """The replays' CPU seconds per phase, the power halving's rungs and every candidate it dropped, with the
    rung and why (:func:`.power.halve_power`)."""
    from . import sweep
    from .power import HALVING_KEEP

    out = []
    if result.cpu:
        out.append("power replay CPU s by phase (every process): "
                   + "; ".join(f"{k} {v:.1f}" for k, v in result.cpu.items())
                   + f"; total {sum(result.cpu.values()):.1f}")
    h = result.halving
    if h is None:
        return out
    rungs = ", ".join(f"rung {r + 1}: the first {jobs} jobs ({share:.0%}), {n} replays"
                      for r, (share, jobs, n) in enumerate(h.rungs))
    out.append(f"power successive halving ({rungs}; then the whole history): per timer, the best 1/{sweep.ETA} "
               f"of the others by gap (at least {HALVING_KEEP}) and any within {sweep.MARGIN:.0%} of no more "
               f"energy at no more wait go on; the timers always")
    if h.dropped:
        out += ["| rung | candidate | kWh on the rung | avg wait s | gap | nearest | why dropped |",
                "|" + "---|" * 7]
        out += [f"| {d.rung + 1} ({d.jobs} jobs) | {d.policy} {d.param} | {d.energy_kwh:.1f} | {d.avg_wait_s:.0f} | "
                f"{d.gap:+.1%} vs {d.timer_s:g} s | {d.best} {d.best_gap:+.1%} | {d.reason} |" for d in h.dropped]
    else:
        out.append("power halving dropped nothing")
    return out


def markdown(doc: dict) -> str:
    """One table row per timer setting from a result JSON (``--table``): the timer and the pick on the tuning
    part (where the choice is made), the outcome, and both on the held-back part with the verdict."""
    rows = doc["power"]
    out = ["| SuspendTime | timer tune kWh / wait s | qualified | pick | pick tune kWh / wait s | outcome | "
           "timer held-back kWh / wait s | pick held-back kWh / wait s | held-back |",
           "|---:|---|---:|---|---|---|---|---|---|"]
    for m in doc["timers"]:
        t = rows[m["timer"]]
        tt = f"{t['tune']['energy_kwh']:.1f} / {t['tune']['avg_wait_s']:.0f}"
        th = f"{t['energy_kwh']:.1f} / {t['avg_wait_s']:.0f}"
        if m["pick"] is None:
            out.append(f"| {m['suspend_time_s']:g} s | {tt} | 0 | - | - | timer | {th} | - | - |")
            continue
        p = rows[m["pick"]]
        de = 100 * (p["energy_kwh"] / t["energy_kwh"] - 1) if t["energy_kwh"] else 0.0
        dw = 100 * (p["avg_wait_s"] / t["avg_wait_s"] - 1) if t["avg_wait_s"] else 0.0
        out.append(f"| {m['suspend_time_s']:g} s | {tt} | {m['qualifying']} | {p['policy']} {p['param']} | "
                   f"{p['tune']['energy_kwh']:.1f} / {p['tune']['avg_wait_s']:.0f} | planner | {th} | "
                   f"{p['energy_kwh']:.1f} / {p['avg_wait_s']:.0f} ({de:+.1f} % / {dw:+.1f} %) | "
                   f"{'dominates' if m['held_back_dominates'] else 'does not'} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--table"]:  # markdown tables of result JSONs (results/tune/power.md)
        for path in argv[1:]:
            print(f"{path}\n\n{markdown(json.loads(Path(path).read_text()))}\n")
        return 0
    ap = argparse.ArgumentParser(prog="python3 -m slurm_plugin.tune.power_eval", description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--site")
    ap.add_argument("--ranking", default="fcfs")
    ap.add_argument("--jobs", type=int, default=None, help="processes (default: every core)")
    ap.add_argument("--suspend-time", type=float, default=None, help="the site's SuspendTime (default 300 s)")
    ap.add_argument("--cache", type=Path, help="keep each finished candidate's scores here (resume a stopped run)")
    ap.add_argument("--prices", default=None, help="the planner's wait prices, comma-separated W (default 1000,10000; "
                    "'none': no planner runs)")
    ap.add_argument("--timers", default=None, help="SuspendTimes, comma-separated s (default 60,300,900,1800,3600)")
    ap.add_argument("--halving", action=argparse.BooleanOptionalAction, default=None,
                    help="successive halving first (default: when the tuning part has 40,000 jobs or more); the "
                         "dropped candidates are still replayed for their rows, never picked")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--plot", type=Path)
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    prices = None if a.prices is None else () if a.prices == "none" else tuple(float(x) for x in a.prices.split(","))
    result, doc = evaluate(a.trace, a.site, a.ranking, a.jobs, suspend_time_s=a.suspend_time, cache=a.cache,
                           prices=prices, halving=a.halving,
                           timers=None if a.timers is None else tuple(float(x) for x in a.timers.split(",")))
    if a.json:
        write_file_atomic(a.json, json.dumps(doc, indent=1) + "\n")
    if a.plot:
        plot(result, f"{Path(a.trace).name}: power candidates ({a.ranking}, EASY backfill)", a.plot)
    print(summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
