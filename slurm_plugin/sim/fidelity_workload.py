"""The heterogeneous, time-compressed replay workload of ``hetsched sim fidelity`` and the site it runs on.

Jobs come in waves (busy stretches, then quiet gaps long enough for Slurm's SuspendTime to power nodes down,
so the next wave powers them up again): CPU jobs of one to 64 cores, some on two or three nodes, some bound
to an arch (``--constraint``); typed and untyped GPU jobs and NPU jobs (the local cluster's fake GRES);
time limits of one to a few minutes, and about 5 % of the jobs run past theirs (Slurm kills them); each job
names a workload class (``--comment=class=...``), which the admission daemon turns into a SiteFactor band.
Times are drawn at "site scale" (runs of minutes to an hour) and divided by ``compress``; a time limit is
never below Slurm's one minute.
"""

from __future__ import annotations

import math

import numpy as np
import yaml

from ..site import Site, resolve_site_path
from .fidelity import ReplayJob

PARTITION = "fidelity"  # one partition over every node group: placement then follows Slurm's node Weight
# Slurm settings of the replay cluster: power saving with a short idle time (the local cluster's nodes
# "boot" in about 2 s), and timeouts short enough that a failed boot shows within the replay.
POWER_SETTINGS = {"suspend_time": 20, "suspend_timeout": 10, "resume_timeout": 30}


def hetero_workload(n: int, seed: int, compress: float = 60.0) -> list[ReplayJob]:
    """``n`` jobs of the demo site's kinds (see the module docstring), deterministic for ``seed``."""
    if n < 1 or compress <= 0:
        raise ValueError(f"hetero_workload: jobs must be >= 1 (got {n}) and compress > 0 (got {compress})")
    rng = np.random.default_rng(seed)
    out: list[ReplayJob] = []
    t, wave_left = 0.0, int(rng.integers(15, 40))
    for _ in range(n):
        if wave_left == 0:  # a quiet gap: nodes idle past SuspendTime power down
            t += float(rng.uniform(1800, 2400)) / compress
            wave_left = int(rng.integers(15, 40))
        wave_left -= 1
        t += float(rng.exponential(45.0)) / compress
        kind = rng.choice(["cpu", "cpu", "cpu", "cpu", "multi", "gpu", "gpu_any", "npu"])
        run = float(rng.uniform(300, 4200))
        nodes, arch, gres = 1, None, None
        if kind == "cpu":
            cores = int(rng.choice([1, 2, 4, 8, 16, 32, 64]))
            arch = None if rng.random() < 0.5 else ("aarch64" if cores > 16 or rng.random() < 0.5 else "x86_64")
        elif kind == "multi":
            arch = str(rng.choice(["x86_64", "aarch64"]))
            nodes, cores = (2, int(rng.choice([4, 8, 16]))) if arch == "x86_64" else (int(rng.integers(2, 4)),
                                                                                      int(rng.choice([16, 32])))
        elif kind == "gpu":
            cores, gres = 8, f"gpu:{rng.choice(['a100', 'h100'])}:{int(rng.choice([1, 2, 4]))}"
        elif kind == "gpu_any":
            cores, gres = 8, f"gpu:{int(rng.choice([1, 2]))}"
        else:
            cores, gres = 8, f"npu:{int(rng.choice([1, 2, 4, 8]))}"
        limit_min = max(1, math.ceil(run * float(rng.uniform(1.2, 3.0)) / compress / 60))
        run_s = min(max(1, round(run / compress)), limit_min * 60 - 5)
        if rng.random() < 0.05:  # runs past its limit: Slurm kills it
            run_s = limit_min * 60 + int(rng.integers(10, 30))
        wclass = "ai-training" if gres else str(rng.choice(["video-render", "web", "batch", "batch"]))
        out.append(ReplayJob(offset_s=round(t, 3), nodes=nodes, cores=cores, run_s=run_s, limit_min=limit_min,
                             arch=arch, gres=gres, wclass=wclass))
    return out


def replay_site_data(site: str, power: bool = True) -> dict:
    """The site file's data for the replay cluster: ``site`` plus one partition over all its node groups
    (:data:`PARTITION`), and Slurm's power saving (:data:`POWER_SETTINGS`) unless ``power`` is False."""
    data = yaml.safe_load(resolve_site_path(site).read_text())
    Site.model_validate(data)  # a bad site file fails here, naming the field
    groups = [g["name"] for c in data["clusters"] for g in c["node_groups"]]
    data["partitions"] = [p for p in data["partitions"] if p["name"] != PARTITION]
    data["partitions"].append({"name": PARTITION, "node_groups": groups, "max_time": "1-00:00:00"})
    if power:
        data["slurm"].update(POWER_SETTINGS)
    return data

