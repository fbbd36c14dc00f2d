"""Fill a local cluster's queue with many pending jobs fast: job arrays split into one record per task.

One ``sbatch`` costs the client a parse of slurm.conf (~0.3 CPU s at 2,240 node lines), so 100,000 separate
submissions would take hours here. Instead each job shape is one held job array (``sbatch -H --array``, one
RPC), and ``scontrol update jobid=A_[0-N] timelimit=T`` (a real change: the array asked T+1) splits the
array's pending tasks (all but the last, which stays in the array's record) into job records of their own (slurmctld keeps a pending array as one record until a task is modified or started), so the queue
holds ``total`` separate pending jobs as a site's would after its users' many single submissions. A few real
single jobs of each shape are submitted too.

Two kinds of queue, neither of which makes Slurm start a job or power a node up:

- ``hold=True``: held jobs (``-H``: priority 0, reason JobHeldUser). The suite reads them as any pending job,
  but held jobs are left alone (``JobState.held``), so its ranking, packing and power steps have nothing to do
  for them: such a queue measures the reads, not the steps.
- ``hold=False``: jobs the cycle really works on. The partitions the shapes name are set DOWN first (slurmctld
  queues jobs for a DOWN partition but allocates them nothing: reason PartitionDown), so the jobs are pending,
  not held, with a priority: the cycle ranks them (a SiteFactor each) and packs them, as for jobs waiting on
  Resources on a fully busy site. The power planner leaves them out (no node powered up starts a job of a DOWN
  partition: ``scale.planner.NOT_FOR_NODES``), so the power step has nothing to do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..slurm import SlurmClient


@dataclass(frozen=True)
class Shape:
    """One kind of job: its share of the queue, time limit (minutes) and sbatch options."""

    name: str
    share: float
    minutes: int
    args: tuple[str, ...]


# For site_configs/large.yaml's partitions, node groups and workload classes (the comment names the class).
LARGE_SHAPES = (
    Shape("batch-1c", 0.25, 30, ("-p", "cpu", "-c", "1", "--comment=class=batch")),
    Shape("web-4c-anyarch", 0.15, 60, ("-p", "cpu", "-c", "4", "--mem=8G", "--constraint=x86_64|aarch64",
                                       "--comment=class=web")),
    Shape("hpc-2n", 0.10, 240, ("-p", "x86", "-N", "2", "-c", "32", "--comment=class=hpc-sim")),
    Shape("render-16c", 0.10, 120, ("-p", "arm", "-c", "16", "--comment=class=video-render")),
    Shape("train-a100", 0.10, 600, ("-p", "gpu", "--gres=gpu:a100:1", "-c", "8", "--comment=class=ai-training")),
    Shape("infer-gpu", 0.10, 30, ("-p", "gpu", "--gres=gpu:1", "-c", "2", "--comment=class=ai-inference")),
    Shape("npu-2", 0.05, 300, ("-p", "npu", "--gres=npu:ascend910b:2", "-c", "8", "--comment=class=ai-training")),
    Shape("riscv-2c", 0.05, 30, ("-p", "riscv", "-c", "2", "--comment=class=web")),
    Shape("dev-2c", 0.05, 60, ("-p", "dev", "-c", "2", "--comment=class=batch")),
    Shape("dpu-1", 0.05, 120, ("-p", "dpu", "--gres=dpu:1", "-c", "4", "--comment=class=batch")),
)


def plan_counts(total: int, shapes: tuple[Shape, ...]) -> list[int]:
    """How many jobs of each shape make ``total``: by share, the rounding remainder to the first shape."""
    counts = [int(total * s.share) for s in shapes]
    counts[0] += total - sum(counts)
    return counts


def shape_partitions(shapes: tuple[Shape, ...]) -> list[str]:
    """The partitions ``shapes`` submit to (their ``-p``), in order, once each."""
    return list(dict.fromkeys(s.args[s.args.index("-p") + 1] for s in shapes if "-p" in s.args))


def partitions_down(client: SlurmClient, partitions: list[str]) -> None:
    """Set ``partitions`` DOWN: slurmctld still queues jobs for them but starts none (reason PartitionDown)."""
    for name in partitions:
        client.run("scontrol", "update", f"partitionname={name}", "state=down")


def fill_queue(client: SlurmClient, total: int, shapes: tuple[Shape, ...] = LARGE_SHAPES, singles: int = 5,
               array_max: int = 10000, hold: bool = True, say=lambda m: None) -> dict:
    """Submit ``total`` pending jobs of ``shapes``: ``singles`` plain sbatch jobs per shape, the rest as arrays
    of at most ``array_max`` tasks, each split into separate records; held, or (``hold=False``) not held in
    partitions set DOWN first (module docstring). Returns what was submitted and how long it took: ``{"jobs",
    "arrays", "singles", "held", "partitions_down", "submit_s", "split_s", "shapes": {name: count}}``.

    Raises SlurmError when Slurm refuses a submission (e.g. MaxJobCount or MaxArraySize too low)."""
    out = {"jobs": 0, "arrays": 0, "singles": 0, "held": hold, "partitions_down": [], "submit_s": 0.0,
           "split_s": 0.0, "shapes": {}}
    if not hold:
        out["partitions_down"] = shape_partitions(shapes)
        partitions_down(client, out["partitions_down"])
    for shape, count in zip(shapes, plan_counts(total, shapes)):
        base = (*(("-H",) if hold else ()), "-o", "/dev/null", "-J", shape.name, *shape.args)
        t0 = time.perf_counter()
        n_single = min(singles, count)
        for _ in range(n_single):
            client.sbatch(*base, "-t", str(shape.minutes), wrap="true")
        left = count - n_single
        arrays = []
        while left > 0:  # a minute longer: the update below must change something, or slurmctld splits nothing
            size = min(left, array_max)
            arrays.append((client.sbatch(*base, "-t", str(shape.minutes + 1), f"--array=0-{size - 1}",
                                         wrap="true"), size))
            left -= size
        t1 = time.perf_counter()
        for array_id, size in arrays:  # one RPC: slurmctld splits these pending tasks into records of their own
            if size > 1:  # all but the last: a range covering the whole array updates the array, splitting none
                client.run("scontrol", "update", f"jobid={array_id}_[0-{size - 2}]", f"timelimit={shape.minutes}",
                           timeout=600)
        out["submit_s"] += t1 - t0
        out["split_s"] += time.perf_counter() - t1
        out["jobs"] += count
        out["arrays"] += len(arrays)
        out["singles"] += n_single
        out["shapes"][shape.name] = count
        say(f"{shape.name}: {count} job(s) ({n_single} single, {len(arrays)} array(s) split)")
    out["submit_s"], out["split_s"] = round(out["submit_s"], 2), round(out["split_s"], 2)
    return out
