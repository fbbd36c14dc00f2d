"""Many policies x backfill settings on one workload: rows, a text table, timeline plots."""

from __future__ import annotations

from collections.abc import Callable

from .run import Prepared, simulate

TABLE_COLS = (("avg_wait_s", "avg wait s", "{:.0f}"), ("p95_wait_s", "p95 wait s", "{:.0f}"),
              ("avg_bsld", "avg bsld", "{:.2f}"), ("utilization", "util", "{:.3f}"),
              ("energy_kwh", "energy kWh", "{:.0f}"), ("cost", "cost", "{:.0f}"),
              ("makespan_s", "makespan s", "{:.0f}"), ("max_wait_s", "max wait s", "{:.0f}"))


def compare(p: Prepared, policies: list[str], backfills: list[bool], semantics: str = "slurm",
            on_row: Callable[[dict], None] | None = None, **kw) -> tuple[list[dict], list[tuple[str, bool, dict]]]:
    """Every (policy, backfill) on ``p``; returns the rows and (policy, backfill, timeline) for plotting."""
    rows, timelines = [], []
    for bf in backfills:
        for pol in policies:
            row, out = simulate(p, pol, backfill=bf, semantics=semantics, **kw)
            rows.append(row)
            timelines.append((pol, bf, out.timeline))
            if on_row:
                on_row(row)
    return rows, timelines


def table(rows: list[dict]) -> str:
    """Markdown table: policies x metrics."""
    head = ["policy", "backfill", "jobs", "unstarted"] + [c[1] for c in TABLE_COLS] + ["wall s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        m = r["metrics"]
        cells = [r["policy"], "yes" if r["backfill"] else "no", str(r["jobs"]), str(r["unstarted"])]
        cells += ["-" if m.get(k) is None else fmt.format(m[k]) for k, _, fmt in TABLE_COLS]
        cells.append(f"{r['wall_s']:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
