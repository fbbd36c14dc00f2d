"""Exceptions survive pickling (errors.py): a worker pool's error reaches the caller as itself."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from slurm_plugin.errors import PicklableError
from slurm_plugin.fsio import LockHeld
from slurm_plugin.slurm.client import SlurmError
from slurm_plugin.snapshot.collect import ProcessCollector
from slurm_plugin.workload.errors import UnfitJobsError, WorkloadError

PACKAGE = Path(__file__).resolve().parents[2] / "slurm_plugin"


def _exception_classes_with_init() -> list[tuple[str, str, list[str]]]:
    """(module file, class, base names) of every class that looks like an exception and defines __init__."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [ast.unparse(b) for b in node.bases]
            if not any(b.endswith(("Error", "Exception", "Held")) for b in bases):
                continue
            if any(isinstance(f, ast.FunctionDef) and f.name == "__init__" for f in node.body):
                found.append((str(path.relative_to(PACKAGE)), node.name, bases))
    return found


def test_every_exception_with_its_own_init_is_picklable():
    classes = _exception_classes_with_init()
    assert len(classes) >= 8, classes  # the walk finds them (SlurmError, SiteError, WorkloadError, ...)
    # a subclass of a PicklableError inherits the pickling (UnfitJobsError from WorkloadError)
    picklable = {name for _, name, bases in classes if "PicklableError" in bases} | {"PicklableError"}
    unfit = [f"{f}: {name}({', '.join(bases)})" for f, name, bases in classes
             if not any(b in picklable for b in bases)]
    assert not unfit, f"derive these from slurm_plugin.errors.PicklableError: {unfit}"


@pytest.mark.parametrize("err", [
    SlurmError(["sinfo", "--json"], 1, "  sinfo: error: no config\n"),
    WorkloadError("trace.swf", "field 4 is not a number", line=12),
    UnfitJobsError("trace.swf", [(3, "needs 9 GPUs")]),
    LockHeld(Path("/run/hetsched/cycle.lock"), 4242),
], ids=lambda e: type(e).__name__)
def test_round_trip_keeps_type_message_and_fields(err):
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err)
    assert {k: v for k, v in vars(back).items()} == {k: v for k, v in vars(err).items()}
    assert isinstance(back, PicklableError)


def test_a_failing_slurm_command_in_the_snapshot_worker_arrives_as_itself(tmp_path):
    """Real sinfo against a slurm.conf it refuses at once (no SlurmctldHost): the error crosses the process boundary as a
    SlurmError and the worker is kept (it was a "terminated abruptly" BrokenProcessPool, and a new worker
    process spawned at every refresh)."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=broken\n")
    collect = ProcessCollector(str(conf))
    try:
        for _ in range(2):
            with pytest.raises(SlurmError) as err:
                collect()
            assert "sinfo" in str(err.value) or "scontrol" in str(err.value), err.value
            assert collect._pool is not None
    finally:
        collect.close()
