"""Gavel's measured throughput matrix (stanford-futuredata/gavel, ``gavel_simulation_throughputs.json``: steps/s
of 26 job types x 1, 2, 4, 8 GPUs on V100, P100 and K80) as per-GPU-type speed factors of workload classes,
and a heterogeneous site of the three types (``site_configs/gavel-het.yaml``), for heterogeneity-aware placement
(issue 18 item 2).

One workload class per (job type, GPU count) with the entry's throughput on each type relative to V100 (the
type the Philly streams' run times are computed on); the Philly reader gives a job that class when the site
has it (:func:`slurm_plugin.workload.gavel.read_philly`). Prices: the per-GPU on-demand cloud prices Gavel's
cost policies use (USD/h: V100 2.48, P100 1.46, K80 0.45); server power: 8 x V100 (DGX-1) 3,500 W busy as in
``philly-v100.yaml``, 8 x P100 and 8 x K80 scaled by the cards' TDP (250 W, 300 W per K80 board); idle watts
are assumptions.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..workload.gavel import class_name

TYPES = ("v100", "p100", "k80")
PRICE_PER_GPU_H = {"v100": 2.48, "p100": 1.46, "k80": 0.45}
POWER_8GPU = {"v100": (1000, 3500), "p100": (800, 2700), "k80": (900, 3100)}  # (idle, busy) W per server


def speed_factors(throughputs: str | Path) -> dict[str, dict[str, float]]:
    """class name -> {gpu type: throughput / V100 throughput}, for every (job type, GPU count) with an entry
    on every type."""
    table = json.loads(Path(throughputs).read_text())
    out = {}
    for key, entry in table["v100"].items():
        job_type, gpus = key.strip("()").rsplit(",", 1)
        ref = float(entry["null"])
        if ref <= 0 or any(key not in table[t] for t in TYPES):
            continue
        out[class_name(job_type.strip("'"), int(gpus))] = {t: round(float(table[t][key]["null"]) / ref, 4)
                                                            for t in TYPES}
    return out


def gavel_site_doc(throughputs: str | Path, servers: int = 5, name: str = "gavel-het") -> dict:
    """The site document: ``servers`` 8-GPU servers of each type (5: 40 GPUs per type, near Gavel's simulated
    36:36:36 cluster), one partition, one class per (job type, GPU count)."""
    groups = []
    for t in TYPES:
        idle, busy = POWER_8GPU[t]
        groups.append({"name": f"{t}x8", "prefix": f"{t}n", "count": servers,
                       "cpu": {"arch": "x86_64", "cores": 40, "sockets": 2, "ghz": 2.2},
                       "memory_gb": 512, "gpu": {"vendor": "nvidia", "type": t, "count": 8, "memory_gb": 16},
                       "cost_per_hour": round(8 * PRICE_PER_GPU_H[t], 2), "power": {"idle_w": idle, "busy_w": busy},
                       "boot_time_s": 180})
    classes = [{"name": c, "accelerators": list(TYPES), "speed": s, "qos": "normal"}
               for c, s in sorted(speed_factors(throughputs).items())]
    return {"name": name,
            "description": f"Gavel's heterogeneous Philly cluster: {servers * 8} V100, P100 and K80 GPUs each in "
                           f"8-GPU servers; one workload class per Gavel job type and GPU count.",
            "slurm": {"cluster_name": "hetsched-gavel", "controller": "ctl1", "suspend_time": -1},
            "clusters": [{"name": "gavel", "node_groups": groups}],
            "partitions": [{"name": "gpu", "node_groups": [g["name"] for g in groups], "default": True}],
            "policy": {"workload_classes": classes,
                       "qos_tiers": [{"name": "normal", "target_pct": 99.0, "priority": 0, "max_wait": "1-0"}]}}


class ThroughputRouting:
    """Heterogeneity-aware placement at arrival: among the node groups a job may use that can start it now, the
    one with the highest effective throughput (its class's speed factor on the group), per unit of the group's
    price when ``per_cost``; the job is narrowed to that group (None: no group has room now, or only one is
    allowed: left to Slurm and packing). ``speed`` is :func:`slurm_plugin.sim.packing.speed_matrix`."""

    def __init__(self, machine, jobs, speed, per_cost: bool = False):
        self.machine, self.jobs, self.speed, self.per_cost = machine, jobs, speed, per_cost
        self._single: dict = {}
        self.stats = {"arrived": 0, "routed": 0, "to_faster": 0}

    def _one(self, req, opt):
        from ..sim.cluster import Req
        key = (req, opt)
        if key not in self._single:
            g = self.machine.groups[opt[0]]
            self._single[key] = Req(req.nodes, req.cores, req.mem, req.gcount, (opt,), req.cores >= g.cores)
        return self._single[key]

    def value(self, j: int, g: int) -> float:
        v = float(self.speed[self.jobs.wclass[j], g])
        return v / max(self.machine.groups[g].cost_per_hour, 1e-9) if self.per_cost else v

    def route(self, j: int, now: float, cluster, req):
        self.stats["arrived"] += 1
        if len(req.options) < 2:
            return None
        free = [o for o in req.options if cluster.candidates(self._one(req, o)) is not None]
        if not free:
            return None
        best = max(free, key=lambda o: (self.value(j, o[0]), -req.options.index(o)))
        self.stats["routed"] += 1
        first = next((o for o in req.options if o in free))  # where Slurm's Weight order would put it now
        self.stats["to_faster"] += self.speed[self.jobs.wclass[j], best[0]] > self.speed[self.jobs.wclass[j], first[0]]
        return self._one(req, best)
