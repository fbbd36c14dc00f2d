"""The ``wipe`` cycle step: a node that ran sensitive work is power-cycled before other work lands on it
(:func:`slurm_plugin.deploy.wipe.plan_wipes`: drained by the Epilog -> POWER_DOWN_FORCE -> POWER_UP -> RESUME,
one edge per cycle through the applier).

Not a policy choice: isolation is the site's promise, so :func:`~.decide.cycle_steps` puts it first in every
cycle (its power actions then win over the power planner's for the same node, see
:func:`~.decide.one_power_action_per_node`). A cluster without sensitive work pays one pass over the nodes'
reasons. Its memory (node -> [phase, job]) is :attr:`CycleMemory.wipe`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..decision import Decision
from ..deploy.wipe import plan_wipes
from .steps import CycleMemory, StepInputs


@dataclass(frozen=True)
class WipeStep:
    """The next edge of every node's power cycle after a sensitive job; keeps the wipe memory."""

    name: str = "wipe"

    def decide(self, inputs: StepInputs, memory: CycleMemory) -> tuple[Decision, CycleMemory]:
        decision, wipe = plan_wipes(inputs.snapshot, {k: list(v) for k, v in memory.wipe.items()})
        if not decision.actions:
            decision = Decision((), "")  # nothing to do: no source in the cycle's journal
        return decision, dataclasses.replace(memory, wipe=wipe)
