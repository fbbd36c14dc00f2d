"""Applying a class's right-sizing suggestion to one new job (site ``policy.rightsize.mode: apply``).

What the shim lets admission see and change: ``cpus_per_task``, ``num_tasks``, ``ntasks_per_node``,
``min_cpus`` and ``pn_min_cpus`` (sbatch derives the last two from the first three), ``min_mem_per_cpu`` and
``min_mem_per_node``. The owner's intent stays safe:

- only submissions of a class with a ``lower`` suggestion, and only requests the user made (a job that gave
  no ``--cpus-per-task`` or memory keeps Slurm's defaults);
- ``--comment="rightsize=no"`` (or ``off``/``keep``) pins the job as asked; so does ``--mincpus`` above what
  the tasks need (``pn_min_cpus``/``min_cpus`` not derived from ``--cpus-per-task``);
- never below the class's history: new = ceil(old x factor), factor = p95 use ratio x (1 + margin), at least 1;
  memory per CPU is recomputed so the job's memory falls by the memory factor only, whatever its CPUs do;
- the job's comment gets ``hetsched:rightsize=cpt:8>3/mem:16000>9600`` so ``hetsched why job`` shows what
  was changed, and the reason names the history it came from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..tags import format_tags
from .request import JobRequest

if TYPE_CHECKING:
    from ..scale.rightsize import ClassSuggestion

PIN_VALUES = ("no", "off", "keep", "false", "0")
MAX_COMMENT = 900  # the shim writes at most 1024 characters into a job_desc string; room for the tag


def lowered(request: int, factor: float) -> int:
    """A whole-unit request scaled by ``factor``, rounded up, never below 1 nor above the request."""
    return max(1, min(request, math.ceil(request * factor - 1e-9)))


def rightsize_request(req: JobRequest, wclass: str | None,
                      table: Mapping[str, ClassSuggestion] | None) -> tuple[dict[str, int], str, str] | None:
    """``(job_desc changes, reason, comment tag)`` lowering ``req`` by its class's suggestion, or None when
    nothing applies; a pinned job returns ``({}, why it was kept, "")`` so the decision can say so.

    Example: class ``web`` keeps 29.25 % of CPUs; ``--cpus-per-task=8 --ntasks=2`` (min_cpus 16,
    pn_min_cpus 8) -> ``{"cpus_per_task": 3, "min_cpus": 6, "pn_min_cpus": 3}``, tag ``rightsize=cpt:8>3``.
    """
    s = table.get(wclass) if (table and wclass and req.op == "submit") else None
    if s is None:
        return None
    if req.comment_tags.get("rightsize", "").lower() in PIN_VALUES:
        return {}, f"class {wclass}: request kept as asked (--comment rightsize=no)", ""
    if len(req.comment or "") > MAX_COMMENT:
        return {}, f"class {wclass}: request kept (comment too long to record a change in)", ""
    changes: dict[str, int] = {}
    tags, why = [], []
    old_cpt = req.cpus_per_task or 1
    new_cpt = old_cpt
    cf = s.factor("cpus")
    if cf < 1 and old_cpt > 1:
        tasks, per_node = req.num_tasks or 1, req.ntasks_per_node or 1
        derived = (req.min_cpus in (None, old_cpt * tasks)) and (req.pn_min_cpus in (None, old_cpt * per_node))
        if not derived:
            why.append("CPUs kept: --mincpus pins them")
        elif (new_cpt := lowered(old_cpt, cf)) < old_cpt:
            changes["cpus_per_task"] = new_cpt
            if req.min_cpus is not None:
                changes["min_cpus"] = new_cpt * tasks
            if req.pn_min_cpus is not None:
                changes["pn_min_cpus"] = new_cpt * per_node
            tags.append(f"cpt:{old_cpt}>{new_cpt}")
            why.append(f"--cpus-per-task {old_cpt} -> {new_cpt} ({s.cpus.reason})")
    mf = s.factor("memory")
    if req.mem_per_node_mb and mf < 1:
        new = lowered(req.mem_per_node_mb, mf)
        if new < req.mem_per_node_mb:
            changes["min_mem_per_node"] = new
            tags.append(f"mem:{req.mem_per_node_mb}>{new}")
            why.append(f"--mem {req.mem_per_node_mb}M -> {new}M ({s.memory.reason})")
    elif req.mem_per_cpu_mb and (mf < 1 or new_cpt < old_cpt):
        new = math.ceil(req.mem_per_cpu_mb * mf * old_cpt / new_cpt - 1e-9)
        if new != req.mem_per_cpu_mb:
            changes["min_mem_per_cpu"] = new
            tags.append(f"mempercpu:{req.mem_per_cpu_mb}>{new}")
            why.append(f"--mem-per-cpu {req.mem_per_cpu_mb}M -> {new}M (memory per task x {mf:.2f})")
    if not changes:
        return ({}, f"class {wclass}: {'; '.join(why)}", "") if why else None
    reason = f"right-sized for class {wclass} from {s.jobs} past jobs ({s.confidence} confidence): " + "; ".join(why)
    return changes, reason, format_tags(rightsize="/".join(tags))
