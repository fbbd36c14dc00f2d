"""Reading a workflow file: YAML (:mod:`.spec`) or a batch script with ``#HETSCHED`` task lines (:mod:`.script`)."""

from __future__ import annotations

from pathlib import Path

from .script import is_script, parse_script
from .spec import MAX_WORKFLOW_BYTES, Problem, Workflow, WorkflowError, parse_yaml


def load_workflow(path: str | Path) -> Workflow:
    """Read and validate a workflow file, YAML or a ``#HETSCHED`` batch script; a :class:`WorkflowError`
    (``FILE:LINE: field.path: message`` per problem) otherwise."""
    source = str(path)
    try:
        raw = Path(path).read_bytes()[:MAX_WORKFLOW_BYTES + 1]
    except OSError as err:
        raise WorkflowError(source, [(None, Problem((), f"cannot read workflow: {err.strerror}"))]) from None
    if len(raw) > MAX_WORKFLOW_BYTES:
        raise WorkflowError(source, [(None, Problem((), f"larger than {MAX_WORKFLOW_BYTES:,} bytes"))])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise WorkflowError(source, [(None, Problem((), f"not UTF-8 text (byte {err.start})"))]) from None
    return parse_script(text, source) if is_script(text) else parse_yaml(text, source)
