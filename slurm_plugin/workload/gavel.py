"""Reader of Gavel's Philly-derived job streams (stanford-futuredata/gavel, ``philly_vc_traces/*.trace``).

Each line: ``job_type <TAB> command <TAB> num_steps_arg <TAB> needs_data_dir <TAB> total_steps <TAB> arrival_s
<TAB> num_gpus``. The run time is ``total_steps / throughput`` on one reference GPU type (default V100) from
``gavel_simulation_throughputs.json`` (next to the trace folder unless given). Jobs ask for ``num_gpus`` GPUs of
any type on one node and one core per GPU; the time limit is the run time (a perfect estimate, as for traces
without estimates). Jobs with no throughput entry (more than 8 GPUs) are skipped and counted, not guessed.

With a ``site`` that has a workload class named :func:`class_name` (job type, GPUs) (``site_configs/gavel-het.yaml``,
see :mod:`slurm_plugin.cost.throughput`), each job gets that class, whose speed factors say how fast it runs on
each GPU type, and a time limit valid on the slowest type it may use (run time / lowest speed factor).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from .errors import WorkloadError
from .jobs import JobTable, Workload
from .limits import MAX_DEVICES_PER_NODE, MAX_DURATION_S, MAX_TIME_S, check, number, read_text, text_lines

FIELDS = 7


def class_name(job_type: str, gpus: int) -> str:
    """A Slurm-safe workload class name for a Gavel job type and GPU count: ``ResNet-18 (batch size 16)``, 2 ->
    ``ResNet-18_bs16_x2``."""
    text = re.sub(r"\s*\(batch size (\d+)\)", r"_bs\1", job_type.strip())
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text) + f"_x{gpus}"


def read_philly(path: str | Path, throughputs: str | Path | None = None, gpu_type: str = "v100",
                site=None) -> Workload:
    path = Path(path)
    if not path.is_file():
        raise WorkloadError(str(path), "no such file")
    source = str(path)
    tput_path = Path(throughputs) if throughputs else path.parent.parent / "gavel_simulation_throughputs.json"
    try:
        table = dict(json.loads(read_text(tput_path))[gpu_type])
    except (KeyError, TypeError, ValueError) as err:
        raise WorkloadError(str(tput_path), f"cannot read {gpu_type} throughputs: {err}") from None
    cols: dict[str, list] = {k: [] for k in ("submit", "run", "limit", "gres_count")}
    kinds: list[str] = []
    skipped: dict[str, int] = {}
    for lineno, line in text_lines(path):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != FIELDS:
            raise WorkloadError(str(path), f"{len(parts)} tab-separated fields, want {FIELDS}", lineno)
        job_type = parts[0]
        steps = number(parts[4], "total_steps", source, lineno, 0, 1e15)
        arrival = number(parts[5], "arrival time", source, lineno, 0, MAX_TIME_S)
        gpus = int(number(parts[6], "num_gpus", source, lineno, 1, MAX_DEVICES_PER_NODE, integer=True))
        entry = table.get(f"('{job_type}', {gpus})")
        if entry is None:
            reason = f"no {gpu_type} throughput entry for {gpus} GPUs"
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        try:
            tput = float(entry["null"])
        except (KeyError, TypeError, ValueError) as err:
            raise WorkloadError(str(tput_path), f"bad {gpu_type} throughput for {job_type!r}: {err!r}") from None
        run = round(check(steps / tput if tput > 0 else math.inf, "run time (total_steps / throughput)", source,
                          lineno, 0, MAX_DURATION_S))
        cols["submit"].append(arrival)
        cols["run"].append(run)
        cols["limit"].append(max(run, 1))
        cols["gres_count"].append(gpus)
        kinds.append(class_name(job_type, gpus))
    n = len(cols["submit"])
    if not n:
        raise WorkloadError(str(path), "no usable jobs")
    extra, names = _classes(site, kinds, cols)
    jobs = JobTable.build(dict(**cols, nodes=[1] * n, cores=cols["gres_count"], gres_name=[0] * n, **extra),
                          gres_names=("gpu",), **names)
    return Workload(name=path.name, jobs=jobs, skipped=skipped)


def _classes(site, kinds: list[str], cols: dict[str, list]) -> tuple[dict, dict]:
    """Workload class columns when ``site`` has the jobs' classes (else none): a job whose class has speed 0 on a
    GPU type (it does not fit there) may use only the other types (``gres_type`` ``a|b``); each such job's limit
    is widened to its run time on the slowest type it may use (changes ``cols["limit"]``)."""
    if site is None:
        return {}, {}
    classes = {c.name: c for c in site.policy.workload_classes or ()}
    types = sorted({t for g in site.node_groups for _, t, _ in g.gres})
    used = tuple(sorted({k for k in kinds if k in classes}))
    if not used:
        return {}, {}
    index = {k: i for i, k in enumerate(used)}
    options: list[str] = []
    gtype = []
    for i, k in enumerate(kinds):
        able = [t for t in types if k in index and classes[k].speed.get(t, 1.0) > 0]
        if k in index and able:
            cols["limit"][i] = math.ceil(cols["run"][i] / min(classes[k].speed.get(t, 1.0) for t in able))
        if k in index and able and len(able) < len(types):
            name = "|".join(able)
            if name not in options:
                options.append(name)
            gtype.append(options.index(name))
        else:
            gtype.append(-1)
    return {"wclass": [index.get(k, -1) for k in kinds], "gres_type": gtype}, {"class_names": used,
                                                                               "gres_types": tuple(options)}
