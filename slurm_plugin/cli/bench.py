"""``hetsched bench``: benchmarks (not tests): each writes a JSON result that names the machine and commit."""

from __future__ import annotations

import click

from .lazy import LazyCommand, LazyGroup

# Each benchmark imports what it measures (Pyomo, the simulator, ...) only when it runs.
BENCHMARKS: dict[str, LazyCommand] = {
    "pack": LazyCommand(".bench_pack:pack_cmd",
                        "Build + solve time, objective vs greedy and gap of the packing MILP on 100 .. 10,000 jobs."),
    "submit": LazyCommand(".bench_submit:submit_cmd",
                          "Measure the job_submit shim + daemon on a real local cluster and write one JSON result."),
    "rank": LazyCommand(".bench_rank:rank_cmd",
                        "Median ms of rank_pending (features + inference + band grouping) over --repeat runs."),
    "sim": LazyCommand(".bench_sim:sim_cmd",
                       "Jobs per second of simulation (the trace already read), fastest of --repeat runs."),
    "cycle": LazyCommand(".bench_cycle:cycle_cmd",
                         "CPU seconds of parse, each cycle step and decide on synthetic snapshots at site scale."),
    "cli": LazyCommand(".bench_cli:cli_cmd",
                       "Start-up time of `hetsched --help` and `hetsched power resume --help` in fresh processes."),
    "deploy": LazyCommand(".bench_deploy:deploy_cmd",
                          "Container start (job start on the node -> first instruction), function invoke round trip "
                          "and cold start, isolation over mixed submissions, on a real local cluster."),
    "power": LazyCommand(".bench_power:power_cmd",
                         "Wall time of `hetsched power resume` for N nodes through sushy-tools' Redfish emulator "
                         "(target < 10 s)."),
    "health": LazyCommand(".bench_health:health_cmd",
                          "CPU and wall time of the node health check on one week of logs (target < 2 s)."),
}


@click.group(cls=LazyGroup, lazy=BENCHMARKS, package=__package__)
def bench() -> None:
    """Measure the suite: submit path, packing, simulator, ranking, CLI start-up."""
