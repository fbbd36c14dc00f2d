"""The job queue read side by side (issue 23): every way to get the queue the snapshot needs, on one live cluster.

Against the cluster of $SLURM_CONF (e.g. large.yaml brought up with ``cluster up --powered-down``, the queue filled
by :func:`slurm_plugin.cluster.queue_fill.fill_queue`: held jobs, so nothing runs), each reader --repeat times in
turn, and per run: wall, the CPU of the Slurm command (this process's children), the CPU of our parse, the bytes
it printed, the records read, and slurmctld's own REQUEST_JOB_INFO time (sdiag, reset before each run):

- ``squeue --all --json`` + json.loads + parse_jobs (the reader before);
- ``scontrol show jobs --json`` (23.02+; on 22.05 the error is recorded);
- ``scontrol -o show jobs`` (text, key=value; parsed to dicts only: a user's comment can forge keys there);
- ``squeue --all -t all -r -h -O <fields>`` + parse_squeue_text (the reader now).

Usage: python3 results/cycle/queue_read_bench.py [--repeat 3] [--output F]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from slurm_plugin.cycle.bench_live import load, rpcs, reset  # noqa: E402
from slurm_plugin.pack.bench import machine  # noqa: E402
from slurm_plugin.slurm import SlurmClient, SlurmError  # noqa: E402
from slurm_plugin.slurm.client import parse_scontrol_oneliner  # noqa: E402
from slurm_plugin.snapshot.parse import parse_jobs  # noqa: E402
from slurm_plugin.snapshot.queue_text import parse_squeue_text, separators, squeue_argv  # noqa: E402

BITS = {"SLURM_BITSTR_LEN": "0"}


def _squeue_json(client):
    out = client.run("squeue", "--all", "--json", env={**client.env, **BITS}).stdout
    return out, lambda: parse_jobs(json.loads(out), keep_finished=True)


def _scontrol_json(client):
    out = client.run("scontrol", "show", "jobs", "--json", env={**client.env, **BITS}).stdout
    return out, lambda: parse_jobs(json.loads(out), keep_finished=True)


def _scontrol_text(client):
    out = client.run("scontrol", "-o", "show", "jobs", env={**client.env, **BITS}).stdout
    return out, lambda: [parse_scontrol_oneliner(line) for line in out.splitlines() if line.strip()]


def _squeue_compact(client):
    field_end, record_end = separators()
    out = client.run(*squeue_argv(field_end, record_end)).stdout
    return out, lambda: parse_squeue_text(out, field_end, record_end)


READERS = {"squeue --json": _squeue_json, "scontrol show jobs --json": _scontrol_json,
           "scontrol -o show jobs (text)": _scontrol_text, "squeue -r -O (compact)": _squeue_compact}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_once(client, read) -> dict:
    reset(client)
    w0, k0, c0 = time.perf_counter(), _children_cpu(), time.process_time()
    out, parse = read(client)
    w1, k1, c1 = time.perf_counter(), _children_cpu(), time.process_time()
    records = parse()
    w2, c2 = time.perf_counter(), time.process_time()
    info = rpcs(client).get("REQUEST_JOB_INFO", {})
    return {"command_wall_s": round(w1 - w0, 3), "command_cpu_s": round(k1 - k0, 3),
            "parse_wall_s": round(w2 - w1, 3), "parse_cpu_s": round(c2 - c1, 3),
            "total_cpu_s": round(k1 - k0 + c2 - c1, 3), "bytes": len(out), "records": len(records),
            "slurmctld_job_info_s": round(info.get("total_time_us", 0) / 1e6, 3),
            "slurmctld_job_info_rpcs": info.get("count", 0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--output", default=str(REPO / "results/cycle/queue-read.json"))
    args = ap.parse_args()
    client = SlurmClient(timeout=900)
    rows: dict[str, list] = {name: [] for name in READERS}
    errors: dict[str, str] = {}
    load_before = load()
    for _ in range(args.repeat):
        for name, read in READERS.items():
            if name in errors:
                continue
            try:
                rows[name].append(run_once(client, read))
            except SlurmError as err:
                errors[name] = str(err)
            print(name, rows[name][-1] if rows[name] else errors.get(name), flush=True)
    best = {name: min(r, key=lambda x: x["total_cpu_s"]) for name, r in rows.items() if r}
    doc = {"slurm": str(client.version), "machine": machine(), "load_before": load_before, "load_after": load(),
           "nice": os.nice(0), "repeat": args.repeat, "runs": rows,
           "fastest_of_runs_by_total_cpu": best, "errors": errors,
           "note": "CPU s = the Slurm command's (children rusage) + our parse's (process_time); wall under the load "
                   "recorded; slurmctld_job_info_s from sdiag (reset before each run)"}
    Path(args.output).write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(best, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
