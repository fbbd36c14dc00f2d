"""The workflow format: a YAML file of tasks with their resources, parallel width, dependencies and limits.

Example (``examples/workflows/render.yaml``)::

    name: render
    tasks:
      - {name: split, cores: 2, mem_gb: 4, runtime_s: 60, time: "00:10:00", command: "split.sh"}
      - name: frames
        after: [{task: split, data_gb: 2}]   # or just [split]
        array: 24                            # parallel width: a job array of 24 elements
        arch: [x86_64, aarch64]              # portable: runs on either
        class: video-render                  # the site's workload class (speed factors)
        runtime_s: 120
      - {name: encode, after: [frames], gpu: {count: 1, types: [a100, h100]}, runtime_s: 300}
      - {name: merge, after: [encode], runtime_s: 30}

A task needs ``name``; everything else has a default: 1 node, 1 core, 1 GB, no accelerator, any arch, width 1,
``runtime_s`` 60 (the estimate the planner uses), ``time`` = the time limit (default: 2 x runtime, at least
one minute). ``constraint`` is a Slurm ``--constraint`` (the shared parser); ``gpu``/``npu``/``dpu`` ask for
``count`` devices of any of ``types`` (empty: any type). :func:`~.files.load_workflow` reports every problem at once as
``FILE:LINE: field.path: message`` (unknown keys with a did-you-mean, unknown or cyclic dependencies); it
lives in :mod:`.files` with the batch-script form (:mod:`.script`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from ..errors import PicklableError
from ..fsio import yaml_node_line
from ..site.bounds import ARCHES, MAX_CPUS_PER_NODE, MAX_DEVICES_PER_NODE, MAX_MEMORY_GB, SECONDS_MAX
from ..site.errors import Problem, format_loc
from ..site.schema import SlurmName, Strict
from ..snapshot.constraint import ConstraintError, parse_constraint

MAX_WORKFLOW_BYTES = 8 << 20  # a 10,000-task workflow is ~1.5 MB
MAX_TASKS = 100_000
MAX_VALUES = 4_000_000  # values after YAML aliases are expanded (a 100,000-task workflow has ~2 M)
MAX_ARRAY = 100_000  # Slurm's MaxArraySize default is 1001; the site's own limit is checked at submit time
Arch = Literal[ARCHES]  # type: ignore[valid-type]


def parse_time(value: str | int | float) -> float:
    """Slurm time (``minutes``, ``MM:SS``, ``HH:MM:SS``, ``D-HH[:MM[:SS]]``) or a number of seconds -> seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not 0 < value <= SECONDS_MAX:
            raise ValueError(f"time {value} s is outside 1 .. {SECONDS_MAX} s")
        return float(value)
    text = str(value).strip()
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        if not d.isdigit():
            raise ValueError(f"time '{value}' is not a Slurm time ([D-]HH:MM:SS, MM:SS or minutes)")
        days = int(d)
    parts = text.split(":")
    if not all(p.isdigit() for p in parts) or len(parts) > 3:
        raise ValueError(f"time '{value}' is not a Slurm time ([D-]HH:MM:SS, MM:SS or minutes)")
    nums = [int(p) for p in parts]
    if days:
        nums += [0] * (3 - len(nums))  # D-HH, D-HH:MM
        secs = nums[0] * 3600 + nums[1] * 60 + nums[2]
    elif len(nums) == 1:
        secs = nums[0] * 60
    elif len(nums) == 2:
        secs = nums[0] * 60 + nums[1]
    else:
        secs = nums[0] * 3600 + nums[1] * 60 + nums[2]
    secs += days * 86400
    if not 0 < secs <= SECONDS_MAX:
        raise ValueError(f"time '{value}' is outside 1 s .. {SECONDS_MAX} s")
    return float(secs)


def slurm_time(seconds: float) -> str:
    """Seconds -> ``D-HH:MM:SS`` (rounded up to whole seconds, at least one minute: Slurm's unit)."""
    s = max(60, int(-(-seconds // 1)))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}"


class Accel(Strict):
    """``count`` devices per node of any of ``types`` (empty: any type the site has)."""

    count: Annotated[int, Field(gt=0, le=MAX_DEVICES_PER_NODE)] = 1
    types: tuple[SlurmName, ...] = ()


class Edge(Strict):
    """A dependency on ``task``, which hands over ``data_gb`` of data."""

    task: SlurmName
    data_gb: Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)] = 0.0


class Task(Strict):
    """One step of a workflow; ``array`` copies of it run in parallel (a job array)."""

    name: SlurmName
    command: str = Field("true", max_length=8192, description="shell command run by every element")
    nodes: Annotated[int, Field(gt=0, le=65536)] = 1
    cores: Annotated[int, Field(gt=0, le=MAX_CPUS_PER_NODE)] = 1
    mem_gb: Annotated[float, Field(gt=0, le=MAX_MEMORY_GB, allow_inf_nan=False)] = 1.0
    gpu: Accel | None = None
    npu: Accel | None = None
    dpu: Accel | None = None
    arch: tuple[Arch, ...] = Field((), description="architectures the task runs on (empty: any)")
    constraint: str | None = Field(None, max_length=4096, description="extra Slurm --constraint")
    workload_class: SlurmName | None = Field(None, alias="class")
    array: Annotated[int, Field(gt=0, le=MAX_ARRAY)] = 1
    after: tuple[SlurmName | Edge, ...] = Field((), max_length=MAX_TASKS)
    runtime_s: Annotated[float, Field(gt=0, le=SECONDS_MAX, allow_inf_nan=False)] = 60.0
    time: str | int | None = Field(None, description="time limit per element (Slurm time or seconds)")

    @field_validator("time")
    @classmethod
    def _time(cls, v: str | int | None) -> str | int | None:
        if v is not None:
            parse_time(v)
        return v

    @field_validator("constraint")
    @classmethod
    def _constraint(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                parse_constraint(v)
            except ConstraintError as err:
                raise ValueError(str(err)) from None
        return v

    @field_validator("command")
    @classmethod
    def _command(cls, v: str) -> str:
        if "\x00" in v:
            raise ValueError("command holds a NUL byte")
        return v

    @model_validator(mode="after")
    def _one_accelerator(self) -> Task:
        if sum(a is not None for a in (self.gpu, self.npu, self.dpu)) > 1:
            raise ValueError("a task asks for at most one accelerator kind (gpu, npu or dpu)")
        return self

    @property
    def accel(self) -> tuple[str, Accel] | None:
        """(kind, request) of the task's accelerator, if any."""
        for kind in ("gpu", "npu", "dpu"):
            a = getattr(self, kind)
            if a is not None:
                return kind, a
        return None

    @property
    def limit_s(self) -> float:
        return parse_time(self.time) if self.time is not None else max(60.0, 2 * self.runtime_s)

    @property
    def edges(self) -> tuple[Edge, ...]:
        return tuple(e if isinstance(e, Edge) else Edge(task=e) for e in self.after)


class Workflow(Strict):
    """A named DAG of tasks."""

    name: SlurmName
    description: str = Field("", max_length=4096)
    tasks: tuple[Task, ...] = Field(min_length=1, max_length=MAX_TASKS)

    def task(self, name: str) -> Task:
        return self._by_name[name]

    @property
    def _by_name(self) -> dict[str, Task]:
        return {t.name: t for t in self.tasks}


class WorkflowError(PicklableError, ValueError):
    """A workflow that cannot be used; ``str()`` is one line per problem: ``FILE:LINE: PATH: MESSAGE``."""

    def __init__(self, source: str, problems: list[tuple[int | None, Problem]]):
        self.source, self.problems = source, tuple(p for _, p in problems)
        lines = [f"{source}{f':{line}' if line else ''}: {p.path}: {p.message}" for line, p in problems]
        head = [f"{source}: {len(lines)} problem(s) in workflow"] if len(lines) > 1 else []
        super().__init__("\n".join(head + lines))


def _graph_problems(wf: Workflow) -> list[Problem]:
    """Dependencies that name no task or the task itself, duplicate names, and cycles (named in order)."""
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for i, t in enumerate(wf.tasks):
        if t.name in seen:
            problems.append(Problem(("tasks", i, "name"), f"duplicate task name '{t.name}' (also tasks[{seen[t.name]}])"))
        seen.setdefault(t.name, i)
    for i, t in enumerate(wf.tasks):
        for k, e in enumerate(t.edges):
            if e.task == t.name:
                problems.append(Problem(("tasks", i, "after", k), f"task '{t.name}' depends on itself"))
            elif e.task not in seen:
                import difflib
                close = difflib.get_close_matches(e.task, list(seen), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                problems.append(Problem(("tasks", i, "after", k), f"no task named '{e.task}'{hint}"))
    if problems:
        return problems
    import networkx as nx

    g = nx.DiGraph((e.task, t.name) for t in wf.tasks for e in t.edges)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return []
    names = [u for u, _ in cycle] + [cycle[0][0]]
    return [Problem(("tasks", seen[cycle[0][1]], "after"), f"dependency cycle: {' -> '.join(names)}")]


def _pydantic_problems(err: ValidationError) -> list[Problem]:
    out = []
    errors = err.errors(include_url=False)
    locs = [tuple(e["loc"]) for e in errors]
    for e in errors:
        if e["type"] == "too_short" and any(o[:len(e["loc"])] == tuple(e["loc"]) and o != tuple(e["loc"])
                                            for o in locs):
            continue  # "0 items after validation" only echoes the errors of its items
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] not in ("value_error", "assertion_error") and not isinstance(e.get("input"), (dict, list)):
            msg += f" (got {e.get('input')!r})"
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or p in ("Edge", "str"))))
        out.append(Problem(loc, msg))
    # `after` items are a name or a mapping: keep one message per item, the mapping's when it was a mapping
    unique: dict[tuple, Problem] = {}
    for p in out:
        unique.setdefault((p.loc, p.message), p)
    return list(unique.values())


def parse_workflow(data: Any, source: str = "<workflow>", root: yaml.Node | None = None) -> Workflow:
    """Validate parsed YAML into a :class:`Workflow` or raise one :class:`WorkflowError` with every problem
    (``root``, the composed YAML node tree, gives the line numbers)."""
    if not isinstance(data, dict):
        raise WorkflowError(source, [(None, Problem((), "expected a mapping with 'name' and 'tasks'"))])
    from ..site.loader import _too_many_nodes  # the site files' guard against YAML alias bombs

    if _too_many_nodes(data, MAX_VALUES):
        raise WorkflowError(source, [(None, Problem((), f"more than {MAX_VALUES:,} values once YAML aliases are "
                                                        "expanded: not a workflow"))])
    try:
        wf = Workflow.model_validate(data)
    except ValidationError as err:
        problems = _pydantic_problems(err)
        raise WorkflowError(source, [(yaml_node_line(root, p.loc), p) for p in problems]) from None
    problems = _graph_problems(wf)
    if problems:
        raise WorkflowError(source, [(yaml_node_line(root, p.loc), p) for p in problems])
    return wf


def parse_yaml(text: str, source: str = "<workflow>") -> Workflow:
    """Validate YAML text into a :class:`Workflow` (errors with line numbers)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark else None
        raise WorkflowError(source, [(line, Problem((), f"not valid YAML: {getattr(err, 'problem', err)}"))]) from None
    return parse_workflow(data, source, root)


__all__ = ["Accel", "Edge", "Task", "Workflow", "WorkflowError", "format_loc", "parse_time", "parse_workflow",
           "parse_yaml", "slurm_time"]
