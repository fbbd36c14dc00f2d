"""Re-simulate every fidelity record in this folder with the current replay and with a variant of it, write the
issue-22 figures of both into one JSON, and print the README table from such a JSON (run from the repository
root; no cluster is started):

nice -n 15 python3 results/sim/fidelity/rescore.py run [--variant FIELD=VALUE ...] [--replay-arg NAME=VALUE ...] [--variant-arg NAME=VALUE ...] [--replay-only] OUT.json [RECORD.json ...]
python3 results/sim/fidelity/rescore.py table OUT.json
python3 -m slurm_plugin sim fidelity --from-record R.json --output NEW.json && \
    python3 results/sim/fidelity/rescore.py history R.json NEW.json

Each record's real side is what it recorded; only the simulation changes: "replay" is ``replay_timing`` of the
record (with ``--replay-arg`` its keyword arguments, e.g. ``power_scan=false``), "variant" the same with the
``--variant`` fields replaced (default: slurmctld's batch passes for new submits instead of a fixed 1.5 s
submit latency); with ``--variant-arg`` the variant is ``replay_timing`` with those keyword arguments over
``--replay-arg``'s (then ``--variant``'s fields, if any, replaced; no default fields). Records run smallest first; OUT is rewritten after each
record, so an interrupted run keeps what it finished. ``history`` replaces record R's figures by a re-scored
copy's (NEW, from ``--from-record``) and keeps R's earlier figures under ``history`` (oldest first)."""

import argparse
import dataclasses
import json
import time
from pathlib import Path

from slurm_plugin.cli.output import write_json
from slurm_plugin.sim.fidelity_replay import compare_record, replay_timing
from slurm_plugin.sim.run import provenance
from slurm_plugin.site import Site

HERE = Path(__file__).parent
KEYS = ("jobs", "kendall_tau", "wait_mae_s", "mean_wait_real_s", "mean_wait_sim_s", "power_ups_real",
        "power_ups_sim", "energy_real_kwh", "energy_sim_kwh", "slurm_version")
VARIANT = {"batch_sched_delay_s": 3.0, "submit_s": 0.0}  # session 10's batch passes (off in the replay)
LABELS = ("replay", "variant")


def targets(r: dict) -> dict:
    """Which of issue 22's targets one simulation meets (tau: 0.9 for 300 jobs, 0.85 for 1,000)."""
    def rel(sim, real):
        return (sim - real) / real if real else float("inf")
    return {"tau": r["kendall_tau"] >= (0.85 if r["jobs"] >= 1000 else 0.9),
            "wait": abs(rel(r["mean_wait_sim_s"], r["mean_wait_real_s"])) <= 0.10,
            "power_ups": abs(rel(r["power_ups_sim"], r["power_ups_real"])) <= 0.10,
            "energy": abs(rel(r["energy_sim_kwh"], r["energy_real_kwh"])) <= 0.05}


def rescore(path: Path, variant: dict | None, replay_args: dict | None = None,
            variant_args: dict | None = None) -> dict:
    """One record's figures with the replay (``replay_timing`` with ``replay_args``) and (unless ``variant`` is
    None) the variant (``replay_timing`` with ``variant_args`` over ``replay_args`` if given, then
    ``variant``'s fields)."""
    data = json.loads(path.read_text())
    site, record = Site.model_validate(data["site"]), data["record"]
    timing = replay_timing(record, data["site"], **(replay_args or {}))
    base = timing if not variant_args else replay_timing(record, data["site"], **((replay_args or {}) | variant_args))
    out = {}
    runs = [("replay", timing)] + ([] if variant is None else [("variant", dataclasses.replace(base, **variant))])
    for label, t in runs:
        cpu = time.process_time()
        result = compare_record(site, record, t)
        out[label] = {k: result[k] for k in KEYS} | {"cpu_s": round(time.process_time() - cpu, 1)}
        out[label]["targets"] = targets(out[label])
    out["timing"] = dataclasses.asdict(timing)
    return out


def _value(text: str):
    return None if text == "None" else json.loads(text)


def run(target: Path, paths: list[Path], variant: dict | None, replay_args: dict | None = None,
        variant_args: dict | None = None) -> None:
    paths = sorted(paths or HERE.glob("fidelity_*.json"), key=lambda p: (p.stat().st_size, p.name))
    doc = {"variant": variant, "replay_args": replay_args, "variant_args": variant_args,
           "provenance": provenance(), "records": {}}
    for p in paths:
        row = doc["records"][p.name] = rescore(p, variant, replay_args, variant_args)
        b = row["replay"]
        a = row.get("variant", b)
        print(f"{p.name}: tau {b['kendall_tau']:.3f} -> {a['kendall_tau']:.3f}, mean wait "
              f"{b['mean_wait_sim_s']:.0f} -> {a['mean_wait_sim_s']:.0f} (real {a['mean_wait_real_s']:.0f}), "
              f"power-ups {b['power_ups_sim']} -> {a['power_ups_sim']} (real {a['power_ups_real']}), energy "
              f"{b['energy_sim_kwh']:.3f} -> {a['energy_sim_kwh']:.3f} (real {a['energy_real_kwh']:.3f}); "
              f"{a['cpu_s']:.0f} CPU s", flush=True)
        write_json(target, doc)


HISTORY_KEYS = ("commit", "timing", "timing_off", "load_avg")


def history(record: Path, rescored: Path) -> None:
    """Record ``record`` with the figures of ``rescored`` (same record, simulated again) and its own earlier
    figures appended to its ``history``."""
    old, new = json.loads(record.read_text()), json.loads(rescored.read_text())
    if old["record"] != new["record"]:
        raise SystemExit(f"{rescored} is not a re-score of {record}: their records differ")
    past = {k: old[k] for k in (*KEYS, *HISTORY_KEYS) if k in old}
    new["history"] = [*old.get("history", []), past]
    write_json(record, new)


def _pct(sim: float, real: float) -> str:
    return f"{100 * (sim - real) / real:+.1f} %"


def _cells(r: dict) -> list[str]:
    bold = "**" if r["targets"]["tau"] else ""
    return [f"{bold}{r['kendall_tau']:.3f}{bold}", _pct(r["mean_wait_sim_s"], r["mean_wait_real_s"]),
            f"{r['power_ups_sim']} ({r['power_ups_real']})", _pct(r["energy_sim_kwh"], r["energy_real_kwh"])]


def _mean_error(rows: list[dict], label: str, sim: str, real: str) -> float:
    return 100 * sum(abs(r[label][sim] - r[label][real]) / r[label][real] for r in rows) / len(rows)


def table(source: Path) -> str:
    """The README table (replay -> variant per record, the replay alone where no variant ran) and the count of
    targets met, from a ``run`` JSON (or several merged: their ``records``)."""
    doc = json.loads(source.read_text())
    lines = ["| record | jobs | Slurm | tau | mean wait vs real | power-ups (real) | energy vs real |",
             "|---|---|---|---|---|---|---|"]
    met = {label: {} for label in LABELS}
    for name, row in sorted(doc["records"].items()):
        b = row["replay"]
        a = row.get("variant", b)
        if a["jobs"] < 300:
            continue
        for label in [k for k in LABELS if k in row]:
            for k, ok in row[label]["targets"].items():
                met[label].setdefault((a["jobs"] >= 1000, k), [0, 0])
                met[label][(a["jobs"] >= 1000, k)][0] += ok
                met[label][(a["jobs"] >= 1000, k)][1] += 1
        cells = [_cells(r) for r in ([b, a] if "variant" in row else [b])]
        lines.append(f"| {name} | {b['jobs']} | {b['slurm_version']} | "
                     + " | ".join(" -> ".join(c[i] for c in cells) for i in range(4)) + " |")
    lines.append("")
    small = [row for row in doc["records"].values() if row["replay"]["jobs"] == 300 and "variant" in row]
    if small:
        lines.append(f"300-job records ({len(small)}), mean over them, replay -> variant: " + ", ".join(
            f"{name} {_mean_error(small, 'replay', sim, real):.1f} -> {_mean_error(small, 'variant', sim, real):.1f} %"
            for name, sim, real in (("|wait error|", "mean_wait_sim_s", "mean_wait_real_s"),
                                    ("|power-up error|", "power_ups_sim", "power_ups_real"),
                                    ("|energy error|", "energy_sim_kwh", "energy_real_kwh")))
            + ", tau " + " -> ".join(f"{sum(r[k]['kendall_tau'] for r in small) / len(small):.3f}" for k in LABELS))
    for big in (False, True):
        keys = [k for k in ("tau", "wait", "power_ups", "energy") if (big, k) in met["replay"]]
        if not keys:
            continue
        n = met["replay"][(big, keys[0])][1]
        variant = all((big, k) in met["variant"] and met["variant"][(big, k)][1] == n for k in keys)
        lines.append(f"{'1,000' if big else '300'}-job records ({n}), targets met"
                     + (", replay -> variant: " if variant else " by the replay: ") + ", ".join(
            f"{k} {met['replay'][(big, k)][0]}" + (f" -> {met['variant'][(big, k)][0]}" if variant else "")
            for k in keys))
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("records", type=Path, nargs="*")
    r.add_argument("--variant", action="append", default=[], metavar="FIELD=VALUE")
    r.add_argument("--replay-only", action="store_true", help="no variant (the 1,000-job records take long)")
    r.add_argument("--replay-arg", action="append", default=[], metavar="NAME=VALUE",
                   help="a keyword argument of replay_timing (JSON value), e.g. power_scan=false")
    r.add_argument("--variant-arg", action="append", default=[], metavar="NAME=VALUE",
                   help="a keyword argument of replay_timing for the variant only, e.g. priority_calc=true")
    t = sub.add_parser("table")
    t.add_argument("source", type=Path)
    h = sub.add_parser("history")
    h.add_argument("record", type=Path)
    h.add_argument("rescored", type=Path)
    a = ap.parse_args()
    if a.cmd == "run":
        variant_args = {k: _value(v) for k, v in (x.split("=", 1) for x in a.variant_arg)}
        variant = {k: _value(v) for k, v in (x.split("=", 1) for x in a.variant)} or ({} if variant_args else VARIANT)
        replay_args = {k: _value(v) for k, v in (x.split("=", 1) for x in a.replay_arg)}
        run(a.out, a.records, None if a.replay_only else variant, replay_args, variant_args)
    elif a.cmd == "history":
        history(a.record, a.rescored)
    else:
        print(table(a.source))
