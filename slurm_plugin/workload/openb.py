"""Reader of Alibaba's OpenB GPU trace (alibaba/clusterdata ``cluster-trace-gpu-v2023``; Weng et al., "Beware
of Fragmentation", USENIX ATC'23): a pod list ``openb_pod_list_*.csv`` and the node list next to it.

Pod columns: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time`` (times in seconds). Node columns: ``sn,cpu_milli,memory_mib,gpu,model``.

How a pod becomes a Slurm job (one node, since a pod is one container):

- submit = ``creation_time``; run time = ``deletion_time - scheduled_time`` (the trace gives every scheduled
  pod a deletion time, also pods in phase ``Running``; those deleted at the trace's end are cut there); time
  limit = the run time (the trace has no estimates, as for SWF traces without them). Pods never scheduled (``Pending``, no ``scheduled_time``)
  have no run time: skipped and counted.
- cores = ceil(``cpu_milli`` / 1000) (Slurm allocates whole CPUs); memory = ``memory_mib`` / 1024 GB.
- GPUs: ``num_gpu`` whole GPUs. A shared GPU (``gpu_milli`` < 1000, only with ``num_gpu`` 1) has no Slurm
  equivalent without MPS or sharding, and a ``shard`` GRES cannot be modelled here because a GPU lent out in
  shards is still free as a whole ``gpu`` to the simulator: such pods get **one whole GPU** (what
  ``--gres=gpu:1`` gives on a Slurm cluster without sharing) and are counted in ``Workload.adjusted``.
- ``gpu_spec`` ``"A|B"`` (GPU types the pod may use) -> the GRES type alternatives ``A|B`` (Slurm: an untyped
  ``--gres=gpu:N`` with ``--constraint="A|B"`` on the GPU type features every GPU node carries); empty = any.
- ``qos`` -> ``qos_priority`` (0..1, used by multifactor): LS 1, Guaranteed 2/3, Burstable 1/3, BE 0; the QoS
  is also the job's workload class.

The node list (``openb_node_list_all_node.csv`` in the pod list's folder unless given) becomes a :class:`Site`
of one node group per distinct (CPUs, memory, GPU count, GPU model), x86_64 (the trace names no arch), GPU
vendor ``nvidia`` (also for the undisclosed G1-G3; the vendor is only a label here), the site file defaults
for power, boot time and cost (the trace has none), and one partition ``openb`` with every group.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from ..site import Site, SiteError, parse_site
from .errors import WorkloadError
from .jobs import JobTable, Workload
from .limits import (MAX_CPUS_PER_NODE, MAX_DEVICES_PER_NODE, MAX_DURATION_S, MAX_MEMORY_GB, MAX_TIME_S, check,
                     number, text_lines)

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
               "creation_time", "deletion_time", "scheduled_time")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
QOS_PRIORITY = {"LS": 1.0, "Guaranteed": 2 / 3, "Burstable": 1 / 3, "BE": 0.0}
DEFAULT_NODE_LIST = "openb_node_list_all_node.csv"
SHARED_GPU = "GPU share < 1000 milli: one whole GPU"


def is_openb_pod_list(path: str | Path) -> bool:
    """Whether ``path`` is a CSV file whose header is the OpenB pod list's."""
    try:
        with open(path, newline="") as fh:
            first = fh.readline()
    except (OSError, UnicodeDecodeError):
        return False
    return tuple(c.strip() for c in first.split(",")) == POD_COLUMNS


def _rows(path: Path, columns: tuple[str, ...]):
    """(line number, row dict) of a CSV file whose header must be exactly ``columns``."""
    reader = csv.reader(line for _, line in text_lines(path))
    header = tuple(c.strip() for c in next(reader, ()))
    if header != columns:
        raise WorkloadError(str(path), f"header {','.join(header) or '(empty)'} is not {','.join(columns)}", 1)
    for row in reader:
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) != len(columns):
            raise WorkloadError(str(path), f"{len(row)} fields, want {len(columns)}", reader.line_num)
        yield reader.line_num, dict(zip(columns, (c.strip() for c in row)))


# The largest value of each integer column (a site's bounds; times as in every trace).
MAXIMUM = {"cpu_milli": MAX_CPUS_PER_NODE * 1000, "memory_mib": MAX_MEMORY_GB * 1024, "gpu": MAX_DEVICES_PER_NODE,
           "num_gpu": MAX_DEVICES_PER_NODE, "gpu_milli": 1000, "creation_time": MAX_TIME_S,
           "scheduled_time": MAX_TIME_S, "deletion_time": MAX_TIME_S}


def _int(row: dict, key: str, path: Path, line: int, minimum: int = 0) -> int:
    return int(number(row[key], key, str(path), line, minimum, MAXIMUM[key], integer=True))


def _pod_number(name: str, line: int) -> int:
    """The job id: the number at the end of the pod name (``openb-pod-0017`` -> 17), else the data row."""
    digits = name[len(name.rstrip("0123456789")):]
    return int(digits) if digits else line - 1


def read_openb_nodes(path: str | Path, name: str = "openb") -> Site:
    """The node list as a site: one node group per distinct node shape, one partition ``openb``."""
    path = Path(path)
    shapes: dict[tuple[int, int, int, str], int] = {}
    for line, row in _rows(path, NODE_COLUMNS):
        cpu = _int(row, "cpu_milli", path, line, 1000)
        mem = _int(row, "memory_mib", path, line, 1024)
        gpus = _int(row, "gpu", path, line)
        model = row["model"]
        if gpus and not model:
            raise WorkloadError(str(path), f"node {row['sn']} has {gpus} GPU(s) but no model", line)
        if cpu % 1000:
            raise WorkloadError(str(path), f"cpu_milli {cpu} is not whole CPUs", line)
        key = (cpu // 1000, mem // 1024, gpus, model if gpus else "")
        shapes[key] = shapes.get(key, 0) + 1
    if not shapes:
        raise WorkloadError(str(path), "no nodes")
    groups = []
    for (cores, mem_gb, gpus, model), count in sorted(shapes.items(), key=lambda kv: (kv[0][3], -kv[1])):
        label = (model.lower() + f"x{gpus}") if gpus else "cpu"
        group = {"name": f"{label}-c{cores}-m{mem_gb}", "count": count, "cpu": {"arch": "x86_64", "cores": cores},
                 "memory_gb": mem_gb}
        if gpus:
            group["gpu"] = {"vendor": "nvidia", "type": model, "count": gpus}
        groups.append(group)
    data = {"name": name, "description": f"node list {path.name} (Alibaba OpenB trace)",
            "clusters": [{"name": name, "node_groups": groups}],
            "partitions": [{"name": "openb", "node_groups": [g["name"] for g in groups], "default": True}]}
    try:
        return parse_site(data, str(path))
    except SiteError as err:
        raise WorkloadError(str(path), f"node list does not make a valid site: {err}") from None


def read_openb(path: str | Path, nodes: str | Path | None = None) -> Workload:
    """Read an OpenB pod list (and its node list, which becomes ``Workload.site``)."""
    path = Path(path)
    site = read_openb_nodes(nodes or path.parent / DEFAULT_NODE_LIST)
    cols: dict[str, list] = {k: [] for k in ("id", "submit", "run", "cores", "mem_gb", "gres_name", "gres_type",
                                              "gres_count", "qos_priority", "wclass")}
    waits: dict[int, float] = {}
    types: list[str] = []
    classes = list(QOS_PRIORITY)
    skipped: dict[str, int] = {}
    adjusted: dict[str, int] = {}
    for line, row in _rows(path, POD_COLUMNS):
        created = _int(row, "creation_time", path, line)
        if not row["scheduled_time"]:
            reason = f"never scheduled in the trace (phase {row['pod_phase'] or '?'})"
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        started = _int(row, "scheduled_time", path, line)
        ended = _int(row, "deletion_time", path, line)
        if started < created or ended < started:
            raise WorkloadError(str(path), f"times out of order: creation {created}, scheduled {started}, "
                                           f"deletion {ended}", line)
        check(ended - started, "run time (deletion_time - scheduled_time)", str(path), line, 0, MAX_DURATION_S)
        gpus = _int(row, "num_gpu", path, line)
        milli = _int(row, "gpu_milli", path, line)
        if gpus and not 0 < milli <= 1000:
            raise WorkloadError(str(path), f"gpu_milli {milli} with {gpus} GPU(s): want 1..1000", line)
        if gpus == 1 and milli < 1000:
            adjusted[SHARED_GPU] = adjusted.get(SHARED_GPU, 0) + 1
        if row["qos"] not in QOS_PRIORITY:
            raise WorkloadError(str(path), f"unknown qos {row['qos']!r} (known: {', '.join(QOS_PRIORITY)})", line)
        spec = "|".join(sorted(set(filter(None, row["gpu_spec"].split("|")))))
        if spec and not gpus:
            raise WorkloadError(str(path), f"gpu_spec {row['gpu_spec']!r} on a pod with no GPU", line)
        if spec and spec not in types:
            types.append(spec)
        cols["id"].append(_pod_number(row["name"], line))
        waits[cols["id"][-1]] = float(started - created)
        cols["submit"].append(created)
        cols["run"].append(ended - started)
        cols["cores"].append(math.ceil(_int(row, "cpu_milli", path, line, 1) / 1000))
        cols["mem_gb"].append(_int(row, "memory_mib", path, line) / 1024)
        cols["gres_name"].append(0 if gpus else -1)
        cols["gres_type"].append(types.index(spec) if spec else -1)
        cols["gres_count"].append(gpus)
        cols["qos_priority"].append(QOS_PRIORITY[row["qos"]])
        cols["wclass"].append(classes.index(row["qos"]))
    if not cols["id"]:
        raise WorkloadError(str(path), "no usable pods")
    n = len(cols["id"])
    jobs = JobTable.build(dict(**cols, limit=[max(r, 1) for r in cols["run"]], nodes=[1] * n),
                          gres_names=("gpu",), gres_types=tuple(types), class_names=tuple(classes))
    return Workload(name=path.name, jobs=jobs, skipped=skipped, adjusted=adjusted, site=site, recorded_wait=waits)
