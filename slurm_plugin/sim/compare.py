"""Many policies x backfill settings on one workload: rows, a text table, timeline plots."""

from __future__ import annotations

from collections.abc import Callable

from .run import Prepared, simulate

TABLE_COLS = (("avg_wait_s", "avg wait s", "{:.0f}"), ("p95_wait_s", "p95 wait s", "{:.0f}"),
              ("avg_bsld", "avg bsld", "{:.2f}"), ("utilization", "util", "{:.3f}"),
              ("energy_kwh", "energy kWh", "{:.0f}"), ("cost", "cost", "{:.0f}"),
              ("makespan_s", "makespan s", "{:.0f}"), ("max_wait_s", "max wait s", "{:.0f}"))


def compare(p: Prepared, policies: list[str], backfills: list[bool], semantics: str = "slurm",
            on_row: Callable[[dict], None] | None = None, packings: tuple[str | None, ...] = (None,),
            jobs: int | None = 1, **kw) -> tuple[list[dict], list[tuple[str, bool, dict]]]:
    """Every (policy, backfill, packing) on ``p``; returns the rows and (label, backfill, timeline) for plotting
    (label: the policy, with ``+pack=NAME`` when packings are compared). ``jobs`` processes run the simulations
    (None: every core); rows come back in the serial order and, but for wall times, equal the serial ones."""
    from .parallel import run_all
    tasks = [(pol, bf, pk, semantics, kw) for bf in backfills for pol in policies for pk in packings]
    results = run_all(_one, p, tasks, jobs, desc=p.workload.name,
                      on_result=(lambda i, res: on_row(res[0])) if on_row else None)
    rows = [row for row, _ in results]
    timelines = [(pol if pk is None else f"{pol} pack={pk}", bf, tl)
                 for (pol, bf, pk, _, _), (_, tl) in zip(tasks, results)]
    return rows, timelines


def _one(p: Prepared, task: tuple) -> tuple[dict, dict]:
    """One run of :func:`compare`: (row, timeline)."""
    pol, bf, pk, semantics, kw = task
    row, out = simulate(p, pol, backfill=bf, semantics=semantics, packing=pk, **kw)
    return row, out.timeline


def table(rows: list[dict]) -> str:
    """Markdown table: policies (or policy files, ``policy_file``) x metrics."""
    packed = any(r.get("packing") is not None for r in rows)
    head = ["policy", "backfill"] + ["packing"] * packed + ["jobs", "unstarted"] + [c[1] for c in TABLE_COLS]
    head += ["wall s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        m = r["metrics"]
        cells = [r.get("policy_file") or r["policy"], "yes" if r["backfill"] else "no"]
        cells += [str(r.get("packing"))] * packed
        cells += [str(r["jobs"]), str(r["unstarted"])]
        cells += ["-" if m.get(k) is None else fmt.format(m[k]) for k, _, fmt in TABLE_COLS]
        cells.append(f"{r['wall_s']:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def packing_ratios(rows: list[dict], on: str = "milp", off: str = "off") -> str:
    """Markdown table, per (policy, backfill): utilization and average wait with packing ``on`` over ``off``
    (same workload, ranking and backfill), with the absolute figures and timeouts of both."""
    by = {(r["policy"], r["backfill"], r.get("packing")): r for r in rows}
    lines = ["| policy | backfill | util off | util on | util on/off | avg wait off s | avg wait on s | "
             "wait on/off | avg bsld on/off | speed timeouts off / on | moves | packing s (max) |",
             "|" + "---|" * 12]
    for (pol, bf, pk), r_off in by.items():
        r_on = by.get((pol, bf, on))
        if pk != off or r_on is None:
            continue
        a, b = r_off["metrics"], r_on["metrics"]
        st = r_on.get("pack_stats") or {}
        ratio = lambda k: "-" if not a.get(k) or b.get(k) is None else f"{b[k] / a[k]:.3f}"  # noqa: E731
        lines.append(
            f"| {pol} | {'yes' if bf else 'no'} | {a['utilization']:.3f} | {b['utilization']:.3f} | "
            f"{ratio('utilization')} | {a['avg_wait_s']:.0f} | {b['avg_wait_s']:.0f} | {ratio('avg_wait_s')} | "
            f"{ratio('avg_bsld')} | {r_off.get('speed_timeouts')} / {r_on.get('speed_timeouts')} | "
            f"{st.get('moves', 0)} | {st.get('solve_s', 0):.1f} ({st.get('max_solve_s', 0):.3f}) |")
    return "\n".join(lines)
