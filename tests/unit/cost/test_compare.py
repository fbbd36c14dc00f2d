"""cost compare: what each scenario may and may not do with a job (static never runs a job outside where its
user pinned it; admission narrows as the daemon decides; throughput routing picks the fastest free group)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from slurm_plugin.admission import admit
from slurm_plugin.cli import main
from slurm_plugin.cost.compare import arms, pin_jobs, run_arm
from slurm_plugin.cost.compare_admission import AdmissionRouting, cluster_snapshot, job_request
from slurm_plugin.cost.throughput import ThroughputRouting, speed_factors
from slurm_plugin.sim.cluster import ClusterState
from slurm_plugin.sim.run import prepare
from slurm_plugin.site import ARCHES
from slurm_plugin.workload.gavel import class_name
from slurm_plugin.workload.jobs import ARCH_BIT

WORKLOAD = "synthetic:jobs=300,seed=3,gpu_any=0.66,load=1.5"
GAVEL = Path(__file__).resolve().parents[3] / ".." / "shared" / "workloads" / "gpu" / "gavel"


@pytest.fixture(scope="module")
def demo():
    return prepare(WORKLOAD, "demo")


def _archs(mask: int) -> list[str]:
    return [a for a in ARCHES if mask & ARCH_BIT[a]]


def test_pin_takes_every_choice_away(demo):
    jobs, machine = demo.workload.jobs, demo.machine
    pinned = pin_jobs(jobs, machine)
    multi = [i for i in range(len(jobs)) if len(_archs(int(jobs.arch_mask[i]))) > 1]
    cluster = ClusterState(machine)
    types = lambda t, i: {machine.groups[g].gres and c for g, c in cluster.req(t, i).options}  # noqa: E731
    untyped = [i for i in np.flatnonzero((jobs.gres_name >= 0) & (jobs.gres_type < 0)) if len(types(jobs, i)) > 1]
    assert multi and untyped  # the workload has both kinds of choice
    for i in multi:
        got = _archs(int(pinned.arch_mask[i]))
        assert len(got) == 1 and got[0] in _archs(int(jobs.arch_mask[i]))
    assert all(len(types(pinned, i)) == 1 and types(pinned, i) < types(jobs, i) for i in untyped)
    single = [i for i in range(len(jobs)) if i not in set(multi) and jobs.gres_type[i] >= 0]
    assert (pinned.arch_mask[single] == jobs.arch_mask[single]).all()
    assert (pinned.gres_type[single] == jobs.gres_type[single]).all()


def _placements(p, arm) -> tuple[dict, dict]:
    """(row, job -> set of node groups it ran on) of one scenario."""
    seen: dict[int, set] = {}

    def watch(engine, t):
        for j, (_, nodes, _) in engine.running.items():
            seen.setdefault(j, set()).update(engine.cluster.group[nodes].tolist())

    row, _ = run_arm(p, arm, observer=watch)
    return row, seen


def test_static_never_runs_a_job_outside_its_pin_and_slurm_does(demo):
    table = arms("fcfs")
    cluster = ClusterState(demo.machine)
    pinned = pin_jobs(demo.workload.jobs, demo.machine)
    allowed = {j: {g for g, _ in cluster.req(pinned, j).options} for j in range(len(pinned))}
    row, seen = _placements(demo, table["static"])
    assert row["unstarted"] == 0 and len(seen) == len(pinned)
    assert all(seen[j] <= allowed[j] for j in seen)
    _, seen_slurm = _placements(demo, table["slurm"])
    assert any(not seen_slurm[j] <= allowed[j] for j in seen_slurm)  # with alternatives some job ran elsewhere


def test_suite_routes_through_admission_within_what_the_user_allowed(demo):
    jobs = demo.workload.jobs
    cluster = ClusterState(demo.machine)
    original = {j: {g for g, _ in cluster.req(jobs, j).options} for j in range(len(jobs))}
    row, seen = _placements(demo, arms("fcfs")["suite"])
    assert row["routers"]["admission"]["routed"] > 0
    assert all(seen[j] <= original[j] for j in seen)
    assert row["utilization_powered"] >= row["utilization"]  # the planner powers idle nodes down


def test_admission_in_the_simulator_is_the_daemons_decision(demo):
    """On an idle cluster a job allowed on aarch64|x86_64 goes where admit() says, and nowhere else."""
    jobs = demo.workload.jobs
    j = next(i for i in range(len(jobs)) if len(_archs(int(jobs.arch_mask[i]))) > 1 and jobs.nodes[i] == 1)
    cluster = ClusterState(demo.machine)
    decision = admit(job_request(jobs, j), cluster_snapshot(demo.site, cluster, 0.0), demo.site)
    arch = decision.changes["features"]
    req = AdmissionRouting(demo.site, jobs).route(j, 0.0, cluster, cluster.req(jobs, j))
    assert req is not None and {demo.machine.groups[g].arch for g, _ in req.options} == {arch}


def test_throughput_routing_prefers_the_fastest_free_group_and_per_cost_the_cheapest_work(demo):
    jobs, machine = demo.workload.jobs, demo.machine
    cluster = ClusterState(machine)
    j = next(i for i in range(len(jobs)) if jobs.gres_name[i] >= 0 and jobs.gres_type[i] < 0 and jobs.nodes[i] == 1)
    req = cluster.req(jobs, j)
    gids = [g for g, _ in req.options]
    speed = np.ones((len(jobs.class_names) + 1, len(machine.groups)))
    speed[jobs.wclass[j], gids[-1]] = 3.0  # the dearest group runs it 3x faster
    fast = ThroughputRouting(machine, jobs, speed).route(j, 0.0, cluster, req)
    assert [g for g, _ in fast.options] == [gids[-1]]
    price = [machine.groups[g].cost_per_hour for g in gids]
    cheap = ThroughputRouting(machine, jobs, speed, per_cost=True).route(j, 0.0, cluster, req)
    best = max(gids, key=lambda g: speed[jobs.wclass[j], g] / machine.groups[g].cost_per_hour)
    assert [g for g, _ in cheap.options] == [best] and len(set(price)) > 1


@pytest.mark.skipif(not GAVEL.is_dir(), reason="../shared/workloads/gpu/gavel is absent")
def test_gavel_classes_give_philly_jobs_their_speed_per_gpu_type():
    speeds = speed_factors(GAVEL / "gavel_simulation_throughputs.json")
    assert speeds[class_name("ResNet-50 (batch size 64)", 1)] == pytest.approx(
        {"v100": 1.0, "p100": 2.62 / 4.39, "k80": 0.62 / 4.39}, rel=0.02)
    p = prepare(str(GAVEL / "philly_vc_traces" / "2869ce.trace"), "site_configs/gavel-het.yaml")
    jobs = p.workload.jobs
    assert (jobs.wclass >= 0).all()
    slowest = np.array([min(v for v in speeds[jobs.class_names[c]].values() if v > 0) for c in jobs.wclass])
    assert np.allclose(jobs.limit, np.ceil(jobs.run / slowest), atol=1)  # valid on the slowest type it may use
    unfit = [i for i, c in enumerate(jobs.wclass) if 0 in speeds[jobs.class_names[c]].values()]
    assert unfit and all(jobs.gres_type_options(i) == {t for t, v in speeds[jobs.class_names[jobs.wclass[i]]].items()
                                                       if v > 0} for i in unfit)  # never sent where it cannot run


def test_cli_writes_the_issue_rows(tmp_path):
    out = tmp_path / "c.json"
    res = CliRunner().invoke(main, ["cost", "compare", "--site", "demo", "-w", "synthetic:jobs=120,seed=1",
                                    "--scenarios", "static,slurm", "--output", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert [r["scenario"] for r in doc["rows"]] == ["static", "slurm"]
    for r in doc["rows"]:
        assert {"scenario", "policy", "utilization", "avg_wait_s", "p95_wait_s", "energy_kwh", "cost",
                "utilization_by_group"} <= set(r)
    bad = CliRunner().invoke(main, ["cost", "compare", "--site", "demo", "-w", "synthetic:jobs=10",
                                    "--scenarios", "nope"])
    assert bad.exit_code != 0 and "unknown scenario 'nope'" in bad.output


def _devices_busy_share(p, row, engine) -> float:
    """Busy device-seconds over existing ones, from the engine's own start/end times and node lists."""
    jobs, m = p.workload.jobs, p.machine
    begin = np.array([engine.begin[j] for j in engine.job_nodes])
    end = np.array([engine.end[j] for j in engine.job_nodes])
    gpus = np.array([jobs.gres_count[j] * len(engine.job_nodes[j]) for j in engine.job_nodes])
    devices = sum(g.count * sum(g.gres.values()) for g in m.groups)
    return float(((end - begin) * gpus).sum() / (devices * row["makespan_s"]))


@pytest.mark.skipif(not GAVEL.is_dir(), reason="../shared/workloads/gpu/gavel is absent")
def test_device_utilization_counts_each_jobs_gpus_from_start_to_end(demo):
    from slurm_plugin.cost.compare import Arm, simulate_arm
    p = prepare(str(GAVEL / "philly_vc_traces" / "2869ce.trace"), "site_configs/gavel-het.yaml")
    row, _, engine = simulate_arm(p, arms()["static"])  # always on: every device powered for the whole run
    want = _devices_busy_share(p, row, engine)
    assert row["utilization_devices"] == pytest.approx(want) == row["utilization_devices_powered"]
    assert set(row["utilization_devices_by_group"]) == {"v100x8", "p100x8", "k80x8"}
    row, _, engine = simulate_arm(demo, Arm("planner", power="planner"))  # idle GPU nodes go down
    want = _devices_busy_share(demo, row, engine)
    assert row["utilization_devices"] == pytest.approx(want)
    assert want < row["utilization_devices_powered"] <= 1.0
