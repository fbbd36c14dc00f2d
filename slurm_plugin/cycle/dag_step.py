"""The ``dag`` cycle step: units of submitted workflows that have not started and whose node class is full move
to the alternative expected to finish them first (:func:`slurm_plugin.dag.submit.rematch_all`), every cycle.

Reads the workflow records (``state_dir``, default ``$HETSCHED_DAG_STATE`` or /var/lib/hetsched/dag) as its
other input besides the snapshot; a workflow with no pending job costs nothing. List it in a policy file's
``steps:`` to switch it on (e.g. ``steps: [rank, pack, dag, reshape, power]``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..decision import Decision
from .inputs import group_states
from .steps import CycleMemory, StepInputs, register_step


@dataclass(frozen=True)
class GraphStep:
    """Re-match the pending units of every recorded workflow (``state_dir``: where the records are)."""

    state_dir: str | None = None

    def decide(self, inputs: StepInputs, memory: CycleMemory) -> tuple[Decision, CycleMemory]:
        from ..dag.submit import rematch_all, state_dir  # networkx and pydantic: only when the step runs

        site = inputs.site
        return rematch_all(state_dir(self.state_dir), site, inputs.snapshot, group_states(inputs.snapshot, site)), memory


register_step("dag", GraphStep)
