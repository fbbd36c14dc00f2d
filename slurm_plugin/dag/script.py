"""The workflow format as a batch script: ``#HETSCHED task NAME key=value ...`` lines open a task, the lines
after it (up to the next one) are its command. Same fields and checks as the YAML form (:mod:`.spec`)::

    #!/bin/bash
    #HETSCHED workflow render
    #HETSCHED task split cores=2 runtime_s=20
    ./split.sh scene.blend
    #HETSCHED task frames after=split array=24 arch=x86_64,aarch64 class=video-render runtime_s=120
    ./render.sh $HETSCHED_TASK_INDEX
    #HETSCHED task encode after=frames gpu=1:a100|h100 runtime_s=300
    ./encode.sh

List values are comma-separated (``after``, ``arch``); ``gpu|npu|dpu=COUNT[:TYPE|TYPE...]``. Errors name the
``#HETSCHED`` line of the task (``FILE:LINE: tasks[1].cores: ...``).
"""

from __future__ import annotations

from .spec import Problem, WorkflowError, parse_workflow

DIRECTIVE = "#HETSCHED"
LISTS = ("after", "arch")
ACCELS = ("gpu", "npu", "dpu")


def is_script(text: str) -> bool:
    return any(line.startswith(DIRECTIVE) for line in text.splitlines())


def _task(words: list[str], line: int, source: str) -> dict:
    task: dict = {"name": words[0]} if words else {}
    for w in words[1:]:
        key, eq, value = w.partition("=")
        if not eq:
            raise WorkflowError(source, [(line, Problem((), f"'{w}' is not key=value"))])
        if key in LISTS:
            task[key] = [v for v in value.split(",") if v]
        elif key in ACCELS:
            count, _, types = value.partition(":")
            task[key] = {"count": count, **({"types": types.split("|")} if types else {})}
        else:
            task[key] = value
    return task


def parse_script(text: str, source: str = "<script>"):
    """The :class:`~.spec.Workflow` a ``#HETSCHED`` batch script describes (see the module docstring)."""
    name, tasks, lines = None, [], []
    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith(DIRECTIVE):
            words = line[len(DIRECTIVE):].split()
            if words[:1] == ["workflow"] and len(words) == 2:
                name = words[1]
            elif words[:1] == ["task"]:
                if not words[1:]:
                    raise WorkflowError(source, [(no, Problem((), "'#HETSCHED task' needs a task name"))])
                tasks.append(_task(words[1:], no, source) | {"command": ""})
                lines.append(no)
            else:
                raise WorkflowError(source, [(no, Problem((), "expected '#HETSCHED workflow NAME' or "
                                                              "'#HETSCHED task NAME key=value ...'"))])
        elif tasks:  # lines before the first task (the #! line, comments) belong to no task
            tasks[-1]["command"] += line + "\n"
    for t in tasks:
        t["command"] = t["command"].strip() or "true"
    data = {"name": name or "workflow", "tasks": tasks}
    try:
        return parse_workflow(data, source)
    except WorkflowError as err:
        located = []
        for p in err.problems:
            i = p.loc[1] if len(p.loc) > 1 and p.loc[0] == "tasks" and isinstance(p.loc[1], int) else None
            located.append((lines[i] if i is not None and i < len(lines) else None, p))
        raise WorkflowError(source, located) from None
