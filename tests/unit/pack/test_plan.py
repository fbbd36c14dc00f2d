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
    from slurm_plugin.pack.plan import within_horizon

    pools = [Pool("a", per_node=Resources(64, 256), free_now=Resources(64, 256), down_nodes=1),  # 128 CPUs in all
             Pool("g", per_node=Resources(32, 256, 4), free_now=Resources(0, 0, 0), down_nodes=1)]  # + 32, 4 GPUs
    cpu = [job(str(i), cpus=39.0) for i in range(10)]  # 39 CPUs each: 8 fit in 2 x 160
    gpu = PendingJob("g1", Resources(cpus=1.0, mem_gb=1.0, accels=4.0), hours=1.0, workload="web", band=0,
                     partitions=("gpu",))
    big = job("big", cpus=400.0)  # more than the bound on its own: skipped, the smaller ones after it are kept
    kept = within_horizon([cpu[0], big, *cpu[1:], gpu], pools, horizon=2.0)
    assert [j.job_id for j in kept] == ["0", "1", "2", "3", "4", "5", "6", "7", "g1"]
    assert within_horizon(cpu[:3], pools, horizon=2.0) == cpu[:3]  # a short queue is packed whole


def test_plan_moves_with_a_horizon_packs_only_what_could_start():
    many = [job(str(i), cpus=64.0) for i in range(200)]  # 12,800 CPUs pending for a 10-node demo site
    moves_all, _ = plan_moves(many, SITE, {}, time_cap_s=5.0)
    moves_cut, result = plan_moves(many, SITE, {}, time_cap_s=5.0, horizon=1.0)
    assert result is not None and moves_cut
    cut_ids = {m.job_id for m in moves_cut}
    assert len(cut_ids) < len({m.job_id for m in moves_all}) or len(moves_all) <= len(moves_cut)
    assert max(int(i) for i in cut_ids) < 20  # only the front of the queue (the demo site has ~10 nodes of 64)
