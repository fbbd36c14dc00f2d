"""The simulator's packing step (the daemon's plan_moves on simulated state) and its speed factors."""

import json
from dataclasses import replace

import numpy as np
import pytest

from slurm_plugin.sim.engine import Engine
from slurm_plugin.sim.hooks import PackView, packing, ranking
from slurm_plugin.sim.machine import machine_from_site
from slurm_plugin.sim.packing import MilpPacking, speed_matrix
from slurm_plugin.site import load_site

from .helpers import Invariants, jobs

SITE_YAML = """
name: two
clusters:
  - name: c
    node_groups:
      - {name: cpu-x86, prefix: x, count: 1, cpu: {arch: x86_64, cores: 16}, memory_gb: 64, cost_per_hour: 0.8}
      - {name: cpu-arm, prefix: a, count: 1, cpu: {arch: aarch64, cores: 64}, memory_gb: 128, cost_per_hour: 0.5}
      - {name: gpu-a100, prefix: g, count: 1, cpu: {arch: x86_64, cores: 32}, memory_gb: 256, cost_per_hour: 12,
         gpu: {vendor: nvidia, type: a100, count: 4}}
      - {name: gpu-h100, prefix: h, count: 1, cpu: {arch: aarch64, cores: 72}, memory_gb: 480, cost_per_hour: 22,
         gpu: {vendor: nvidia, type: h100, count: 4}}
partitions:
  - {name: batch, node_groups: [cpu-x86, cpu-arm], default: true}
  - {name: gpu, node_groups: [gpu-a100, gpu-h100]}
policy:
  workload_classes:
    - {name: ai-training, accelerators: [a100, h100], speed: {a100: 1.0, h100: 2.0}}
    - {name: web, portable: true, archs: [x86_64, aarch64], speed: {x86_64: 1.0, aarch64: 0.5}}
  default_class: web
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    path = tmp_path_factory.mktemp("site") / "two.yaml"
    path.write_text(SITE_YAML)
    return load_site(path)


def table(*rows, classes=("ai-training", "web")):
    """Job rows as in helpers.jobs, plus ``wclass`` (index into ``classes``)."""
    t = jobs(*rows)
    return replace(t, wclass=np.array([r.get("wclass", -1) for r in rows], dtype=np.int16), class_names=classes)


def engine(site, t, pack=None, speed=True):
    m = machine_from_site(site)
    return Engine(m, t, ranking("fcfs"), observer=Invariants(), packing=pack,
                  speed=speed_matrix(site, m, t) if speed else None)


def test_speed_factors_stretch_run_times_up_to_the_limit(site):
    arm = ("aarch64",)
    t = table(dict(submit=0, run=100, limit=1000, arch=arm, cores=8, wclass=1),   # web on arm: 0.5 -> 200 s
              dict(submit=0, run=100, limit=150, arch=arm, cores=8, wclass=1),    # 200 s > limit: cut at 150
              dict(submit=0, run=100, gres=("gpu", "h100", 1), cores=4, wclass=0))  # training on h100: 2x
    out = engine(site, t).run()
    assert list(out.end - out.begin) == [200.0, 150.0, 50.0]


def test_speed_matrix_reads_the_sites_factors(site):
    m = machine_from_site(site)
    s = speed_matrix(site, m, table(dict(submit=0, run=1)))
    assert s[1].tolist() == [1.0, 0.5, 1.0, 0.5]    # web: x86 1.0, arm 0.5 (also on the GPU nodes' CPUs)
    assert s[0].tolist() == [1.0, 1.0, 1.0, 2.0]    # training: 0 (not allowed on CPU nodes) is taken as 1.0
    assert s[2].tolist() == [1.0] * 4               # no class


def test_flexible_waiting_job_is_narrowed_to_the_class_with_room(site):
    """FCFS without backfill: the pinned arm head waits for arm until 300; behind it the flexible web job
    waits too. At the packing step of t=120 x86 is free (arm is not): the job is narrowed to cpu-x86 (as
    ``scontrol update features=x86_64`` would) and starts there right after the head. The head is pinned and
    keeps its request."""
    m = machine_from_site(site)
    t = table(dict(submit=0, run=4000, cores=32, gres=("gpu", "a100", 4), wclass=0),  # fill the GPU nodes
              dict(submit=0, run=4000, cores=72, gres=("gpu", "h100", 4), wclass=0),
              dict(submit=0, run=100, cores=16, arch=("x86_64",), wclass=1),
              dict(submit=0, run=300, limit=900, cores=64, arch=("aarch64",), wclass=1),
              dict(submit=1, run=10, limit=900, cores=64, arch=("aarch64",), wclass=1),
              dict(submit=2, run=50, limit=900, cores=16, arch=("x86_64", "aarch64"), wclass=1))
    pol = MilpPacking(site, m, t, interval_s=60.0)
    e = Engine(m, t, ranking("fcfs"), backfill=False, observer=Invariants(), packing=pol,
               speed=speed_matrix(site, m, t))
    out = e.run()
    assert e._req_of(5).options == ((0, -1),)             # narrowed to cpu-x86
    assert e._req_of(4) is e.cluster.req(t, 4)            # pinned: untouched
    assert out.begin.tolist() == [0, 0, 0, 0, 600, 600]   # arm work at speed 0.5: 300 s -> 600 s
    assert out.end[5] == 650                              # on x86 at speed 1.0 (on arm: 100 s)
    assert pol.stats.moves == 1 and pol.stats.solves >= 1


def test_decide_moves_only_flexible_jobs_and_leaves_jobs_already_there(site):
    m = machine_from_site(site)
    t = table(dict(submit=0, run=10, cores=8, arch=("x86_64", "aarch64"), wclass=1),
              dict(submit=0, run=10, cores=8, arch=("aarch64",), wclass=1),
              dict(submit=0, run=10, cores=4, gres=("gpu", None, 1), wclass=0),
              dict(submit=0, run=10, cores=4, gres=("gpu", "a100", 1), wclass=0))
    pol = MilpPacking(site, m, t)
    e = engine(site, t, pack=pol)
    view = PackView(0.0, np.arange(4), e.cluster, 0, e._req_of)
    out = pol.decide(view)
    assert set(out) == {0, 2}, out                    # the pinned arm job and the typed a100 job stay
    assert {g for g, _ in out[0].options} == {0}      # web: x86 is worth 1.0, arm 0.5
    assert {g for g, _ in out[2].options} == {3}      # untyped GPU training: h100 is twice as fast
    assert [p.pinned for p in map(pol.pending_job, range(4), map(e._req_of, range(4)))] == [False, True, False, True]
    for j, r in out.items():
        e._req[j] = r
    assert pol.decide(PackView(0.0, np.arange(4), e.cluster, 1, e._req_of)) == {}  # already there


def test_multi_node_job_is_never_sent_to_a_group_too_small(site):
    m = machine_from_site(site)
    t = table(dict(submit=0, run=10, nodes=2, cores=8, arch=("x86_64", "aarch64"), wclass=1))
    pol = MilpPacking(site, m, t)
    e = engine(site, t, pack=pol)
    out = pol.decide(PackView(0.0, np.arange(1), e.cluster, 0, e._req_of))
    # cpu-x86 and cpu-arm have one node each: the 2-node job may only keep its options (x86 over 2 groups)
    assert all(sum(m.groups[g].count for g, _ in r.options) >= 2 for r in out.values())


def test_packing_needs_a_site():
    with pytest.raises(ValueError, match="needs a site"):
        packing("milp", None, None, None)
    with pytest.raises(ValueError, match="unknown packing policy 'nope'"):
        packing("nope", object(), None, None)


def test_cli_compare_packing_both_reports_ratios(tmp_path):
    from click.testing import CliRunner

    from slurm_plugin.cli import main
    out = tmp_path / "c.json"
    res = CliRunner().invoke(main, ["sim", "compare", "--site", "demo", "-w", "synthetic:jobs=300,seed=1,gpu_any=0.66",
                                    "--policies", "fcfs", "--backfill", "on", "--packing", "both", "--output", str(out)])
    assert res.exit_code == 0, res.output
    rows = json.loads(out.read_text())["rows"]
    assert [r["packing"] for r in rows] == ["off", "milp"]
    assert rows[0]["pack_stats"] is None and rows[1]["pack_stats"]["cycles"] > 0
    assert "util on/off" in res.output and "wait on/off" in res.output


def test_cli_packing_needs_a_site_and_slurm_semantics(tmp_path):
    from click.testing import CliRunner

    from slurm_plugin.cli import main
    res = CliRunner().invoke(main, ["sim", "compare", "--site", "demo", "-w", "synthetic:jobs=50,seed=1",
                                    "--policies", "fcfs", "--semantics", "rlscheduler", "--packing", "on"])
    assert res.exit_code != 0 and "packing runs only under --semantics slurm" in res.output


def test_backlog_per_group_survives_narrowing(site):
    """The scaling view's per-group backlog counts a job against its original cheapest group at enqueue and at
    start, also when packing narrowed it in between (else the counts drift and never return to zero)."""
    from slurm_plugin.sim.hooks import IdleSuspend
    m = machine_from_site(site)
    t = table(dict(submit=0, run=4000, cores=32, gres=("gpu", "a100", 4), wclass=0),
              dict(submit=0, run=4000, cores=72, gres=("gpu", "h100", 4), wclass=0),
              dict(submit=0, run=100, cores=16, arch=("x86_64",), wclass=1),
              dict(submit=0, run=300, limit=900, cores=64, arch=("aarch64",), wclass=1),
              dict(submit=1, run=10, limit=900, cores=64, arch=("aarch64",), wclass=1),
              dict(submit=2, run=50, limit=900, cores=16, arch=("x86_64", "aarch64"), wclass=1))
    e = Engine(m, t, ranking("fcfs"), backfill=False, observer=Invariants(), scaling=IdleSuspend(1e9),
               packing=MilpPacking(site, m, t), speed=speed_matrix(site, m, t))
    e.run()
    assert e._req_of(5).options == ((0, -1),)  # narrowed from (arm, x86) to x86
    assert e.backlog.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("restore", [False, True])
def test_restore_unassigned_undoes_a_narrowing_the_milp_no_longer_backs(site, restore):
    m = machine_from_site(site)
    t = table(dict(submit=0, run=10, cores=8, arch=("x86_64", "aarch64"), wclass=1))
    pol = MilpPacking(site, m, t, restore_unassigned=restore)
    e = engine(site, t, pack=pol)
    first = pol.decide(PackView(0.0, np.arange(1), e.cluster, 0, e._req_of))
    e._req[0] = first[0]
    e.cluster.free_c[:] = 0  # nothing free any more: the MILP assigns nothing
    again = pol.decide(PackView(60.0, np.arange(1), e.cluster, 1, e._req_of))
    assert again == ({0: e.cluster.req(t, 0)} if restore else {})
