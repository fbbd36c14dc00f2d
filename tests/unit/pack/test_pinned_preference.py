"""A pinned job counts its capacity before a movable job of the same band (issue 23): it is queued there already
and Slurm starts it there, so giving its place to a movable job only moves that job to wait behind it. Live,
without this, three cycles moved 541, 256, then 102 different band-5 GPU jobs onto one 256-job class."""

from slurm_plugin.pack import PendingJob, Resources, classes_from_site, problem_from_jobs
from slurm_plugin.pack.options import PINNED_PREFERENCE, build_options
from slurm_plugin.site import load_site

POOLS, CLASSES = classes_from_site(load_site("demo"))


def gpu_job(job_id: str, pinned: bool) -> PendingJob:
    return PendingJob(job_id=job_id, per_job=Resources(4, 8, 1), hours=1.0, workload="ai-inference", band=5,
                      partitions=("gpu",), archs=("aarch64",) if pinned else (), accel_types=("h100",),
                      pinned=pinned, current_partition="gpu")


def test_a_pinned_job_is_worth_a_little_more_than_a_movable_one_of_its_band_on_the_same_class():
    problem = problem_from_jobs([gpu_job("1", pinned=True), gpu_job("2", pinned=False)], POOLS, CLASSES)
    pinned, movable = (next(i for i, s in enumerate(problem.shapes) if s.pinned is p) for p in (True, False))
    opts = build_options(problem)
    for klass in set(opts.klass[opts.shape == pinned].tolist()):
        for tier in set(opts.tier[opts.shape == pinned].tolist()):
            def net(shape):
                return float(opts.net[(opts.shape == shape) & (opts.klass == klass) & (opts.tier == tier)][0])
            assert net(pinned) > net(movable)
            assert net(pinned) - net(movable) < 2 * PINNED_PREFERENCE * net(movable) + 1e-9  # a tie-break only


def test_a_band_still_outweighs_the_preference():
    lower = PendingJob(job_id="1", per_job=Resources(4, 8, 1), hours=1.0, workload="ai-inference", band=4,
                       partitions=("gpu",), archs=("aarch64",), accel_types=("h100",), pinned=True)
    problem = problem_from_jobs([lower, gpu_job("2", pinned=False)], POOLS, CLASSES)
    opts = build_options(problem)
    pinned = next(i for i, s in enumerate(problem.shapes) if s.pinned)
    assert opts.net[opts.shape == pinned].max() < opts.net[opts.shape != pinned].max()
