"""Synthetic Slurm outputs for a site at any size: what a cycle would read from a large live cluster.

:func:`scaled_site` grows (or shrinks) every node group of a site to reach a node count; :func:`synthetic_docs`
writes the three documents :func:`~.collect.build_snapshot` reads - the nodes (``sinfo --json`` v0.0.38 for
Slurm 22.05, ``scontrol show nodes --json`` v0.0.42 for 24.11), ``scontrol -o show partition`` and ``squeue
--json`` in the same version - with running jobs on a share of the nodes, some nodes powered down and
``pending`` jobs of the site's workload classes (a third of them job array tasks, GPU jobs on GPU partitions,
portable jobs with an architecture OR-constraint). Seeded: the same arguments give the same documents. Used by
``hetsched bench cycle`` and the scale tests; the parsers are the real ones, only the cluster is made up.
"""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

import hostlist

if TYPE_CHECKING:
    from ..site import Site

FORMATS = ("22.05", "24.11")


def scaled_site(site: Site, nodes: int) -> Site:
    """``site`` with each node group's count multiplied so the total is about ``nodes`` (each group >= 1)."""
    if nodes < 1:
        raise ValueError(f"nodes must be >= 1 (got {nodes})")
    factor = nodes / site.node_count()
    doc = site.model_dump()  # validated again, not model_copy'd: a copy keeps cached hostnames of the old count
    for cluster in doc["clusters"]:
        for group in cluster["node_groups"]:
            group["count"] = max(1, round(group["count"] * factor))
    return type(site).model_validate(doc)


def _num(value: int, fmt: str):
    return value if fmt == "22.05" else {"set": True, "infinite": False, "number": value}


def _node_record(group, name: str, state: str, flags: list[str], alloc_cpus: int, gres_used: int, fmt: str) -> dict:
    cpus = group.cpu.cores
    gres = ",".join(f"{n}:{t}:{c}" for n, t, c in group.gres)
    used = ",".join(f"{n}:{t}:{gres_used if i == 0 else 0}" for i, (n, t, _) in enumerate(group.gres))
    features = list(group.all_features)
    rec = {"name": name, "cpus": cpus, "alloc_cpus": alloc_cpus, "real_memory": group.memory_gb * 1024,
           "alloc_memory": alloc_cpus * 1024, "gres": gres, "gres_used": used, "weight": 1, "reason": "",
           "architecture": group.cpu.arch}
    if fmt == "22.05":
        return {**rec, "state": state.lower(), "state_flags": flags, "features": ",".join(features),
                "active_features": ",".join(features), "partitions": []}
    return {**rec, "state": [state, *flags], "features": features, "active_features": features, "partitions": []}


def _job_record(job_id: int, state: str, partition: str, cpus: int, gpus: int, klass: str, features: str,
                submit: int, limit_min: int, nodes: str, array_job_id: int, fmt: str) -> dict:
    return {"job_id": job_id, "job_state": state if fmt == "22.05" else [state], "partition": partition,
            "user_id": 1000 + job_id % 50, "name": f"job{job_id}", "features": features,
            "cpus": _num(cpus, fmt), "node_count": _num(1, fmt), "memory_per_node": _num(cpus * 1024, fmt),
            "memory_per_cpu": _num(0, fmt) if fmt != "22.05" else None, "time_limit": _num(limit_min, fmt),
            "tres_per_node": f"gres/gpu:{gpus}" if gpus else "", "priority": _num(1000 + job_id % 997, fmt),
            "qos": "normal", "account": "", "comment": f"class={klass}", "wckey": "", "nodes": nodes,
            "state_reason": "None" if state == "RUNNING" else "Priority", "submit_time": _num(submit, fmt),
            "array_job_id": _num(array_job_id, fmt), "start_time": _num(submit + 60 if state == "RUNNING" else 0, fmt),
            "end_time": _num(0, fmt)}


def synthetic_docs(site: Site, pending: int, fmt: str = "22.05", now: int = 1_800_000_000, seed: int = 0,
                   busy_share: float = 0.6, down_share: float = 0.2) -> tuple[dict, str, dict]:
    """(nodes document, partitions text, squeue document) of ``site`` in Slurm ``fmt``'s layout: ``busy_share``
    of each group's nodes run one job, ``down_share`` are powered down, the rest idle; ``pending`` jobs wait."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)} (got {fmt!r})")
    rng = random.Random(seed)
    node_recs, jobs = [], []
    job_id = 1
    for g in site.node_groups:
        names = g.hostnames
        busy, down = int(len(names) * busy_share), int(len(names) * down_share)
        for i, name in enumerate(names):
            if i < busy:
                cpus = g.cpu.cores
                gpus = g.gres[0][2] if g.gres and g.gres[0][0] == "gpu" else 0
                node_recs.append(_node_record(g, name, "ALLOCATED", [], cpus, gpus, fmt))
                part = next((p.name for p in site.partitions if g.name in p.node_groups), site.partitions[0].name)
                jobs.append(_job_record(job_id, "RUNNING", part, cpus, gpus, site.policy.default_class, "",
                                        now - rng.randrange(60, 86_400), rng.choice((60, 240, 1440)), name, 0, fmt))
                job_id += 1
            elif i < busy + down:
                node_recs.append(_node_record(g, name, "IDLE", ["POWERED_DOWN"], 0, 0, fmt))
            else:
                node_recs.append(_node_record(g, name, "IDLE", [], 0, 0, fmt))
    by_group = {g.name: g for g in site.node_groups}
    parts = []
    for p in site.partitions:
        hosts = [h for name in p.node_groups for h in by_group[name].hostnames]
        members = set(hosts)
        for rec in node_recs:
            if rec["name"] in members:
                rec["partitions"].append(p.name)
        parts.append(f"PartitionName={p.name} Default={'YES' if p.default else 'NO'} "
                     f"MaxTime={p.max_time} Nodes={hostlist.collect_hostlist(hosts)} "
                     f"PriorityTier={p.priority_tier} State={p.state}")
    gpu_parts = [p.name for p in site.partitions if any(by_group[n].gres and by_group[n].gres[0][0] == "gpu"
                                                         for n in p.node_groups)]
    cpu_parts = [p.name for p in site.partitions if p.name not in gpu_parts] or [site.partitions[0].name]
    classes = [c.name for c in site.policy.workload_classes] or [site.policy.default_class]
    array_id = 0
    for k in range(pending):
        gpu = bool(gpu_parts) and rng.random() < 0.15
        if k % 3 == 0 or array_id == 0:  # a third start a new array of a few tasks, the rest join it or not
            array_id = job_id if rng.random() < 0.3 else 0
        jobs.append(_job_record(job_id, "PENDING", rng.choice(gpu_parts if gpu else cpu_parts),
                                2 ** rng.randrange(0, 7), rng.choice((1, 2, 4)) if gpu else 0, rng.choice(classes),
                                "aarch64|x86_64" if rng.random() < 0.3 else "",
                                now - rng.randrange(0, 7 * 86_400), rng.choice((30, 60, 240, 720, 1440)), "",
                                array_id, fmt))
        job_id += 1
    return ({"nodes": node_recs}, "\n".join(parts) + "\n", {"jobs": jobs})


def pending_sizes(low: int, high: int, points: int) -> list[int]:
    """``points`` pending-queue sizes spread evenly on a log scale from ``low`` to ``high``."""
    if points < 2:
        return [high]
    step = (math.log10(high) - math.log10(low)) / (points - 1)
    return sorted({round(10 ** (math.log10(low) + i * step)) for i in range(points)})
