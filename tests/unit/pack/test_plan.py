"""plan_moves (the one packing step of the daemon and the simulator) and the node-count check of options."""

from slurm_plugin.pack import GroupState, PendingJob, Resources
from slurm_plugin.pack.plan import plan_moves
from slurm_plugin.site import load_site

SITE = load_site("demo")


def job(job_id, nodes=1, cpus=8.0, pinned=False, archs=("x86_64", "aarch64")):
    return PendingJob(job_id, Resources(cpus=cpus, mem_gb=1.0), hours=1.0, workload="web", band=0,
                      partitions=("batch",), archs=archs, nodes=nodes, pinned=pinned, current_partition="batch")


def test_nothing_movable_means_no_solve():
    assert plan_moves([job("1", pinned=True)], SITE, {}, time_cap_s=1.0) == ([], None)


def test_flexible_job_goes_to_the_faster_free_arch():
    moves, result = plan_moves([job("1"), job("2", pinned=True, archs=("x86_64",))], SITE, {}, time_cap_s=1.0)
    assert result is not None and result.status.value == "optimal"
    assert [(m.job_id, m.partition, m.features) for m in moves] == [("1", "batch", ("x86_64",))]


def test_a_job_of_more_nodes_than_a_group_has_is_never_sent_there():
    # cpu-x86 has 2 nodes, cpu-arm 3: a 3-node web job may only go to arm, even though x86 is worth more to it
    x86_idle_arm_busy = {"cpu-arm": GroupState(free=Resources(cpus=3 * 64, mem_gb=3 * 128))}
    moves, _ = plan_moves([job("1", nodes=3, cpus=3 * 8)], SITE, x86_idle_arm_busy, time_cap_s=1.0)
    assert [(m.job_id, m.features) for m in moves] == [("1", ("aarch64",))]


def test_the_horizon_keeps_the_most_urgent_jobs_that_could_start_and_skips_the_rest():
    from slurm_plugin.pack import Pool
    from slurm_plugin.pack.plan import horizon_capacity, keep_within

    pools = [Pool("a", per_node=Resources(64, 256), free_now=Resources(64, 256), down_nodes=1),  # 128 CPUs in all
             Pool("g", per_node=Resources(32, 256, 4), free_now=Resources(0, 0, 0), down_nodes=1)]  # + 32, 4 GPUs
    cap = horizon_capacity(pools, 2.0)
    assert cap == (320.0, 1536.0, 8.0)
    cpu = [(39.0, 1.0, 0.0)] * 10  # 39 CPUs each: 8 fit in 2 x 160
    gpu = (1.0, 1.0, 4.0)
    big = (400.0, 1.0, 0.0)  # more than the bound on its own: skipped, the smaller ones after it are kept
    kept = list(keep_within([cpu[0], big, *cpu[1:], gpu], cap))
    assert kept == [True, False] + [True] * 7 + [False] * 2 + [True]
    assert all(keep_within(cpu[:3], cap))  # a short queue is packed whole
