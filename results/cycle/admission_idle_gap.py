"""What one admission answer costs when requests arrive with idle time between them (issue 23): the daemon's
``AdmissionServer.answer`` in this process, on large.yaml's 2,240 nodes (a synthetic snapshot: the real parsers,
no cluster), called after sleeping GAP between calls, with and without the CPU wake-up latency limit held at 0
(``daemon/cpu_latency.py``, what ``cpu_latency_us: 0`` does in the daemon). Root only for the held rows.

Usage: python3 results/cycle/admission_idle_gap.py [--calls 400] [--gaps 0,0.001,0.002,0.005,0.01] [--output F]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(REPO))

from slurm_plugin.daemon.bench import BENCH_JOB, summarize  # noqa: E402
from slurm_plugin.daemon.cpu_latency import CpuLatencyHold  # noqa: E402
from slurm_plugin.daemon.server import AdmissionServer  # noqa: E402
from slurm_plugin.pack.bench import machine  # noqa: E402
from slurm_plugin.site import load_site  # noqa: E402
from slurm_plugin.snapshot.collect import build_snapshot  # noqa: E402
from slurm_plugin.snapshot.synthetic import synthetic_docs  # noqa: E402


class Fixed:
    """A refresher whose snapshot never changes."""

    def __init__(self, snap):
        self.current = snap


def rows(server: AdmissionServer, line: bytes, gaps: list[float], calls: int, held: bool) -> list[dict]:
    out = []
    for gap in gaps:
        wall, cpu = [], []
        for _ in range(calls):
            if gap:
                time.sleep(gap)
            w0, c0 = time.perf_counter(), time.thread_time()
            server.answer(line)
            cpu.append((time.thread_time() - c0) * 1e6)
            wall.append((time.perf_counter() - w0) * 1e6)
        out.append({"gap_s": gap, "latency_held": held, "wall_us": summarize(wall), "cpu_us": summarize(cpu)})
        print(f"gap {gap * 1000:5.1f} ms  held {held!s:5}  wall p50/p99 {out[-1]['wall_us']['p50']:7.1f} / "
              f"{out[-1]['wall_us']['p99']:7.1f} us", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--gaps", default="0,0.001,0.002,0.005,0.01")
    ap.add_argument("--output", type=Path, default=None)
    args = ap.parse_args()
    gaps = [float(g) for g in args.gaps.split(",")]
    site = load_site(REPO / "site_configs/large.yaml")
    nodes, parts, _ = synthetic_docs(site, 0, "22.05")
    server = AdmissionServer(Path("/nonexistent/unused.sock"), site, Fixed(build_snapshot(nodes, parts)), {0})
    line = (json.dumps({"v": 1, "op": "submit", "job": BENCH_JOB}) + "\n").encode()
    for _ in range(50):
        server.answer(line)  # warm: imports, memo
    doc = {"machine": machine(), "nodes": len(server.refresher.current.nodes), "job": BENCH_JOB,
           "load_start": [round(x, 2) for x in os.getloadavg()], "rows": rows(server, line, gaps, args.calls, False)}
    with CpuLatencyHold(0) as hold:
        if hold.held:
            doc["rows"] += rows(server, line, gaps, args.calls, True)
    doc["load_end"] = [round(x, 2) for x in os.getloadavg()]
    (args.output.write_text if args.output else sys.stdout.write)(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
