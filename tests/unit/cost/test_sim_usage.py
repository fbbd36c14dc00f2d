"""The cost report of a simulated run (``hetsched cost report -w``): the engine's own placements, priced."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from slurm_plugin.cli import main
from slurm_plugin.cost.compare import arms, simulate_arm
from slurm_plugin.cost.report import cost_report, job_cost
from slurm_plugin.cost.sim_usage import node_names, simulated_usage
from slurm_plugin.sim.run import prepare

WORK = "synthetic:jobs=120,seed=3,load=0.6"


def _run(scenario: str = "slurm"):
    p = prepare(WORK, "demo")
    _, _, engine = simulate_arm(p, arms()[scenario])
    return p, engine


def test_every_started_job_is_one_use_on_the_nodes_it_ran_on():
    p, engine = _run()
    uses = simulated_usage(p.site, p.machine, engine.jobs, engine.begin, engine.end, engine.job_nodes)
    started = np.flatnonzero(~np.isnan(engine.begin))
    assert [u.job_id for u in uses] == [str(int(engine.jobs.id[j])) for j in started]
    names = node_names(p.site, p.machine)
    group_of = {h: g.name for g in p.site.node_groups for h in g.hostnames}
    for u, j in zip(uses, started):
        assert u.nodes == tuple(names[int(i)][0] for i in engine.job_nodes[j])
        assert u.elapsed_s == engine.end[j] - engine.begin[j]
        assert u.cpus == engine.jobs.cores[j] * len(u.nodes)
        # the partition holds the group the job ran on
        part = next(x for x in p.site.partitions if x.name == u.partition)
        assert group_of[u.nodes[0]] in part.node_groups
    rows = cost_report(p.site, uses, ("class",))
    assert sum(r.jobs for r in rows) == len(uses)
    assert abs(sum(r.node_hours for r in rows) -
               sum(len(u.nodes) * u.elapsed_s / 3600 for u in uses)) < 1e-9
    by_host = {h: g for g in p.site.node_groups for h in g.hostnames}
    assert abs(sum(r.cost for r in rows) - sum(job_cost(p.site, u, by_host) for u in uses)) < 1e-6
    assert all(r.billed is None for r in rows)  # Slurm's billing TRES: not simulated


def test_a_whole_node_job_costs_its_groups_hourly_price():
    p, engine = _run()
    uses = simulated_usage(p.site, p.machine, engine.jobs, engine.begin, engine.end, engine.job_nodes)
    by_host = {h: g for g in p.site.node_groups for h in g.hostnames}
    whole = [u for u in uses if u.cpus / len(u.nodes) >= by_host[u.nodes[0]].cpu.cores *
             by_host[u.nodes[0]].cpu.threads_per_core]
    assert whole, "the workload has whole-node jobs"
    for u in whole:
        price = sum(by_host[h].cost_per_hour for h in u.nodes)
        assert abs(job_cost(p.site, u, by_host) - price * u.elapsed_s / 3600) < 1e-6 * max(price, 1)


def test_cli_prices_a_simulation_and_refuses_mixed_sources(tmp_path):
    res = CliRunner().invoke(main, ["cost", "report", "--site", "demo", "-w", WORK, "--scenario", "slurm",
                                    "--by", "partition", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert rows and all(r["cost"] >= 0 and r["billed"] is None for r in rows)
    export = tmp_path / "x.txt"
    export.write_text("JobID\n")
    both = CliRunner().invoke(main, ["cost", "report", "--site", "demo", "-w", WORK, "--sacct", str(export)])
    assert both.exit_code == 2 and "not both" in both.output
    bad = CliRunner().invoke(main, ["cost", "report", "--site", "demo", "-w", WORK, "--scenario", "nope"])
    assert bad.exit_code == 2 and "nope" in bad.output and "suite" in bad.output
