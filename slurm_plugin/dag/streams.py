"""DAG workloads for the simulator: the Decima TPC-H job graphs and a render/ML pipeline generator, streamed
with Poisson arrivals at a given load.

Each :class:`Arrival` is a validated :class:`~.spec.Workflow` (whose ``runtime_s`` per task is the planner's
estimate: the mean of its elements) plus the measured or drawn duration of every element, and its arrival time.

TPC-H (``../shared/workloads/dag/decima_tpch_dags.json.gz``, Mao et al., SIGCOMM 2019): a stage of
``num_tasks`` tasks is a task of width ``num_tasks``, one core each; element durations are drawn (seeded) from
the stage's measured first- and later-wave durations at the executor count closest above min(width, 100) that
has data (Decima's simulator draws by the executor count a job holds). Load L sets the mean inter-arrival time
to the mean work over the machine's capacity of the busiest resource (cores or accelerators), over L.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .spec import Workflow, parse_workflow


@dataclass(frozen=True)
class Arrival:
    """One workflow of a stream: ``durations[task]`` holds the run time of each of its elements (seconds)."""

    workflow: Workflow
    arrival: float
    durations: dict[str, np.ndarray]



def _stage_durations(stage: dict, width: int, rng: np.random.Generator) -> np.ndarray:
    keys = sorted(int(k) for k in stage["first_wave_ms"])
    want = min(width, 100)
    order = [k for k in keys if k >= want] + [k for k in reversed(keys) if k < want]
    for k in order:
        pool = list(stage["first_wave_ms"].get(str(k), [])) + list(stage["rest_wave_ms"].get(str(k), []))
        if pool:
            return rng.choice(np.asarray(pool, dtype=float) / 1000.0, size=width)
    raise ValueError(f"stage {stage['stage']} has no measured duration")


def read_tpch(path: str | Path) -> dict[str, dict]:
    """The Decima TPC-H graphs by name (``tpch-<size>-q<q>``), as in the file (JSON, gzipped or not)."""
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rt", encoding="utf-8") if gz else open(path, encoding="utf-8")) as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{err.lineno}: not JSON: {err.msg}") from None
    if not isinstance(data, dict) or not data:
        raise ValueError(f"{path}: expected a mapping of DAG name -> graph")
    return data


def tpch_workflow(name: str, dag: dict, rng: np.random.Generator) -> tuple[Workflow, dict[str, np.ndarray]]:
    """One TPC-H graph as a workflow (stage i -> task ``s<i>``) and its drawn element durations."""
    parents: dict[int, list[int]] = {}
    for a, b in dag["edges"]:
        parents.setdefault(int(b), []).append(int(a))
    tasks, durs = [], {}
    for st in dag["stages"]:
        i, w = int(st["stage"]), max(int(st["num_tasks"]), 1)
        d = _stage_durations(st, w, rng)
        durs[f"s{i}"] = d
        tasks.append({"name": f"s{i}", "array": w, "runtime_s": float(d.mean()),
                      "time": int(max(60, math.ceil(2 * d.max()))), "after": [f"s{p}" for p in parents.get(i, [])]})
    return parse_workflow({"name": name.replace("_", "-"), "tasks": tasks}, source=name), durs


def pipeline_workflow(k: int, rng: np.random.Generator, kind: str) -> tuple[Workflow, dict[str, np.ndarray]]:
    """A render pipeline (split -> N portable frames -> GPU encode -> merge) or an ML pipeline (prepare ->
    M portable shards -> GPU training (ai-training: A100 or H100) -> GPU evaluation -> report)."""
    if kind == "render":
        n = int(rng.integers(8, 65))
        spec = [("split", 2, 1, None, None, (), 30.0, []),
                ("frames", 4, n, "video-render", None, ("x86_64", "aarch64"), float(rng.uniform(60, 600)), ["split"]),
                ("encode", 8, 1, None, {"count": 1}, (), float(rng.uniform(120, 900)), ["frames"]),
                ("merge", 1, 1, None, None, (), 20.0, ["encode"])]
    else:
        m = int(rng.integers(4, 33))
        spec = [("prepare", 4, 1, None, None, (), 60.0, []),
                ("shards", 8, m, "web", None, ("x86_64", "aarch64"), float(rng.uniform(60, 300)), ["prepare"]),
                ("train", 16, 1, "ai-training", {"count": 2, "types": ["a100", "h100"]}, (),
                 float(rng.uniform(1800, 7200)), ["shards"]),
                ("evaluate", 4, 1, None, {"count": 1}, (), float(rng.uniform(120, 600)), ["train"]),
                ("report", 1, 1, None, None, (), 15.0, ["evaluate", "shards"])]
    tasks, durs = [], {}
    for name, cores, width, wclass, gpu, arch, mean, after in spec:
        d = np.maximum(1.0, rng.normal(mean, 0.15 * mean, size=width))
        durs[name] = d
        t = {"name": name, "cores": cores, "mem_gb": 2.0 * cores, "array": width, "runtime_s": mean,
             "time": int(max(60, math.ceil(2 * mean))), "after": after}
        if wclass:
            t["class"] = wclass
        if gpu:
            t["gpu"] = gpu
        if arch:
            t["arch"] = list(arch)
        tasks.append(t)
    return parse_workflow({"name": f"{kind}-{k}", "tasks": tasks}, source=f"{kind}-{k}"), durs


def _work(wf: Workflow, d: dict[str, np.ndarray]) -> tuple[float, float]:
    """(core-seconds, accelerator-seconds) of one workflow."""
    cores = sum(d[t.name].sum() * t.cores * t.nodes for t in wf.tasks)
    accel = sum(d[t.name].sum() * t.accel[1].count * t.nodes for t in wf.tasks if t.accel)
    return float(cores), float(accel)


def poisson_stream(items: Sequence[tuple[Workflow, dict[str, np.ndarray]]], capacity: tuple[float, float],
                   load: float, rng: np.random.Generator) -> list[Arrival]:
    """Arrivals of ``items`` in order, inter-arrival times exponential with the mean that puts the busiest
    resource at ``load``: max(mean core-s / cores, mean accelerator-s / accelerators) / load, for
    ``capacity`` = (cores, accelerators) of the machine; the first arrives at 0."""
    if load <= 0:
        raise ValueError(f"load must be > 0 (got {load})")
    work = np.array([_work(wf, d) for wf, d in items]).reshape(-1, 2)
    per = [work[:, i].mean() / c for i, c in enumerate(capacity) if c > 0]
    mean_gap = max(per) / load
    gaps = rng.exponential(mean_gap, size=len(items))
    gaps[0] = 0.0
    times = np.cumsum(gaps)
    return [Arrival(wf, float(t), d) for (wf, d), t in zip(items, times)]


def tpch_stream(path: str | Path, count: int, capacity: tuple[float, float], load: float, seed: int = 1) -> list[Arrival]:
    """``count`` graphs drawn uniformly (with replacement) from the file, durations drawn, Poisson arrivals."""
    dags = read_tpch(path)
    rng = np.random.default_rng(seed)
    names = sorted(dags)
    picks = rng.integers(0, len(names), size=count)
    items = []
    for k, i in enumerate(picks):
        wf, d = tpch_workflow(names[i], dags[names[i]], rng)
        items.append((wf.model_copy(update={"name": f"{wf.name}-{k}"}), d))
    return poisson_stream(items, capacity, load, rng)


def pipeline_stream(count: int, capacity: tuple[float, float], load: float, seed: int = 1) -> list[Arrival]:
    """``count`` render and ML pipelines (alternating), Poisson arrivals."""
    rng = np.random.default_rng(seed)
    items = [pipeline_workflow(k, rng, "render" if k % 2 == 0 else "ml") for k in range(count)]
    return poisson_stream(items, capacity, load, rng)


def random_workflow(n: int, seed: int = 1) -> Workflow:
    """A random ``n``-task DAG for planning benchmarks: a binary-tree backbone plus cross edges, widths 1-16,
    1-4 cores, most tasks portable across x86/ARM, about 1 % needing a GPU."""
    rng = np.random.default_rng(seed)
    tasks = [{"name": "t0", "runtime_s": 30}]
    for i in range(1, n):
        parents = {f"t{(i - 1) // 2}"} | ({f"t{int(rng.integers(0, i))}"} if rng.random() < 0.3 else set())
        t = {"name": f"t{i}", "runtime_s": float(rng.uniform(5, 600)), "array": int(rng.integers(1, 17)),
             "cores": int(rng.integers(1, 5)), "after": sorted(parents)}
        if rng.random() < 0.8:
            t["arch"] = ["x86_64", "aarch64"]
        if rng.random() < 0.01:
            t["gpu"] = {"count": 1}
        tasks.append(t)
    return parse_workflow({"name": f"random-{n}", "tasks": tasks}, source=f"random-{n}")
