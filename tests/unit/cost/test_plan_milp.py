"""The capacity-plan MILP against brute force on small instances, and the Pareto helpers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from slurm_plugin.cost.pareto import dispatch, hypervolume, milp_front, nondominated
from slurm_plugin.cost.plan_milp import PlanMilp
from slurm_plugin.cost.plan_model import PlanInstance, parse_horizon


def tiny(demand, speed=((1.0, 1.0),), max_wait=(1,), penalty=(0.5,), late_share=(1.0,), count=(1, 2)):
    H, G = len(demand[0]), len(count)
    rng = np.random.default_rng(sum(map(sum, demand)))
    return PlanInstance(
        groups=tuple(f"g{i}" for i in range(G)), count=np.array(count), burst=np.zeros(G, bool),
        classes=tuple(f"c{i}" for i in range(len(demand))), speed=np.array(speed, float),
        demand=np.array(demand, float), max_wait_h=np.array(max_wait), late_share=np.array(late_share, float),
        penalty=np.array(penalty, float), on_cost=np.round(rng.uniform(1, 3, (G, H)), 1),
        busy_cost=np.round(rng.uniform(0, 1, (G, H)), 1), name="tiny")


def brute_force(inst: PlanInstance, late_ub, left_ub) -> np.ndarray:
    """Every integer plan (nodes on and node-hours used per group and hour), its (cost, job-hours)."""
    C, G, H = len(inst.classes), len(inst.groups), inst.hours
    assert C == 1 and np.all(inst.speed == 1)
    per_hour = [(x, y) for x in itertools.product(*[range(n + 1) for n in inst.count])
                for y in itertools.product(*[range(v + 1) for v in x])]
    out = []
    w = int(inst.max_wait_h[0])
    for plan in itertools.product(per_hour, repeat=H):
        backlog, cost, jh, late, ok = 0.0, 0.0, 0.0, 0.0, True
        for t, (x, y) in enumerate(plan):
            backlog += inst.demand[0, t] - sum(y)
            if backlog < -1e-9:
                ok = False
                break
            window = inst.demand[0, max(0, t + 1 - w):t + 1].sum() if w > 0 else 0.0
            lt = max(0.0, backlog - window)
            late += lt
            cost += float(np.dot(x, inst.on_cost[:, t]) + np.dot(y, inst.busy_cost[:, t]) + inst.penalty[0] * lt)
            jh += backlog + sum(y)
        if ok and late <= late_ub[0] + 1e-9 and backlog <= left_ub[0] + 1e-9:
            out.append((cost, jh))
    return nondominated(np.array(out))


@pytest.mark.parametrize("demand,max_wait,late_share", [
    ([[2, 1, 0]], (1,), (1.0,)),
    ([[3, 0, 1]], (0,), (1.0,)),
    ([[1, 3, 1]], (1,), (0.2,)),
    ([[4, 0, 0]], (3,), (1.0,)),  # no deadline but the horizon: work may wait for cheap hours
])
def test_milp_front_is_the_brute_force_front(demand, max_wait, late_share):
    inst = tiny(demand, max_wait=max_wait, late_share=late_share)
    milp = PlanMilp(inst, integral_work=True)
    truth = brute_force(inst, *milp.qos_bounds())
    assert len(truth) >= 2  # a real trade-off
    # every brute-force Pareto point is what the epsilon-constraint MILP finds at that bound ...
    for cost, jh in truth:
        sol = milp.solve("cost", max_job_hours=jh + 1e-7, rel_gap=0.0)
        assert sol.cost == pytest.approx(cost, abs=1e-6) and sol.job_hours <= jh + 1e-6
    # ... and the front it reports lies on the brute-force front
    front, _ = milp_front(milp, points=2 * len(truth))
    for point in front.points:
        assert any(np.allclose(point, t, atol=1e-5) for t in truth), (point, truth)
    assert np.allclose(front.points[0], truth[0], atol=1e-5) and np.allclose(front.points[-1], truth[-1], atol=1e-5)


def test_dispatch_agrees_with_the_milp_objectives():
    """A plan NSGA-II proposes is scored as the MILP would score the same placement: all on, served at once."""
    inst = tiny([[2, 1, 0]], max_wait=(1,))
    cost, jh, late, left = dispatch(inst, np.repeat(inst.count[:, None], inst.hours, axis=1))
    # all 3 node-hours served in their hour on g0 first (fastest first, ties by index), nothing waits
    expected = float((inst.on_cost * inst.count[:, None]).sum() + inst.busy_cost[0, 0] + inst.busy_cost[1, 0] + inst.busy_cost[0, 1])
    assert (cost, jh, late.sum(), left.sum()) == pytest.approx((expected, 3.0, 0.0, 0.0))


def test_unattainable_qos_is_bounded_by_the_best_all_on_plan():
    inst = tiny([[5, 0, 0]], max_wait=(0,), late_share=(0.0,))  # 5 node-hours at once on 3 nodes
    milp = PlanMilp(inst)
    assert milp.attainable == {"c0": {"late": 2.0, "left": 0.0}}  # 2 node-hours wait one hour
    assert milp.solve("job_hours") is not None


def test_hypervolume_and_nondominated():
    pts = np.array([[1, 5], [2, 3], [3, 3], [4, 1], [2, 6]], float)
    assert nondominated(pts).tolist() == [[1, 5], [2, 3], [4, 1]]
    ideal, nadir = np.array([1.0, 1.0]), np.array([4.0, 5.0])
    # normalised: (0, 1), (1/3, 0.5), (1, 0); ref 1.1
    want = 1.1 * 0.1 + (1.1 - 1 / 3) * 0.5 + 0.1 * 0.5
    assert hypervolume(pts, ideal, nadir) == pytest.approx(want)
    assert hypervolume(pts[:1], ideal, nadir) < hypervolume(pts, ideal, nadir)


@pytest.mark.parametrize("text,hours", [("7d", 168), ("36h", 36)])
def test_parse_horizon(text, hours):
    assert parse_horizon(text) == hours


@pytest.mark.parametrize("text", ["7", "0h", "40d", "1w"])
def test_parse_horizon_refuses(text):
    with pytest.raises(ValueError, match="horizon"):
        parse_horizon(text)


def test_choice_within_the_loss_and_written_as_calendars():
    from slurm_plugin.cost.plan import choose, plan_document

    inst = tiny([[2, 1, 0, 0, 1, 3]], max_wait=(6,), count=(2, 2))
    choice = choose(inst, max_loss=0.2, rel_gap=0.0)
    assert choice.chosen.cost <= choice.fast.cost
    assert choice.chosen.job_hours <= choice.fast.job_hours / 0.8 + 1e-6
    summary = choice.summary(inst)
    assert summary["performance_loss_pct"] <= 20.0 + 1e-6 and summary["cost_change_pct"] <= 0
    doc = plan_document(inst, choice.chosen)
    assert doc["plan"]["power"]["g0"] == [int(v) for v in choice.chosen.on[0]]
    for cal in doc["policy"]["calendars"]:  # one per group the plan turns off, windows = its hours on (UTC)
        g = inst.groups.index(cal["name"].removeprefix("plan-"))
        on_hours = sum(int(w["end"][:2]) - int(w["start"][:2]) for w in cal["windows"])
        assert on_hours == int((choice.chosen.on[g] > 0).sum())
    from slurm_plugin.site.schema import Calendar

    [Calendar(**c) for c in doc["policy"]["calendars"]]  # valid site calendars


def test_plot_fronts(tmp_path):
    import json

    from slurm_plugin.cost.pareto_plot import plot_fronts

    doc = {"instance": {"name": "tiny"}, "pareto": [
        {"method": "milp", "hypervolume": 0.9, "points": 2, "cpu_s": 1.0, "front": [[1, 5], [2, 3]]},
        {"method": "nsga2", "hypervolume": 0.5, "points": 1, "cpu_s": 1.0, "front": [[2, 4]]}]}
    (tmp_path / "a.json").write_text(json.dumps(doc))
    out = plot_fronts([tmp_path / "a.json"], tmp_path / "p.png")
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_cli_pareto_rows_and_provenance(tmp_path):
    import json

    from click.testing import CliRunner

    from slurm_plugin.cli import main

    out = tmp_path / "p.json"
    res = CliRunner().invoke(main, ["cost", "pareto", "--site", "demo", "-w", "synthetic:jobs=30,seed=1,load=0.8",
                                    "--horizon", "4h", "--points", "3", "--pop", "8", "--time-limit", "20",
                                    "--output", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert [p["method"] for p in doc["pareto"]] == ["milp", "nsga2"]
    assert all({"hypervolume", "points", "wall_s", "cpu_s"} <= set(p) for p in doc["pareto"])
    # the commit measured: HEAD of a git checkout, empty where the tree is not one (the fresh-machine run's archive)
    assert doc["provenance"]["git_commit"] == _head() and doc["provenance"]["nproc"] >= 1


def _head() -> str:
    import subprocess
    from pathlib import Path

    try:  # a fresh minbase machine may have no git at all
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True)
    except OSError:
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""
