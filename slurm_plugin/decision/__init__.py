"""One cycle's decision and the one applier that turns it into Slurm commands.

Policies (ranking, packing, scaling) are pure functions from a snapshot to :class:`Decision` objects; the
:class:`SlurmApplier` is the only code that changes Slurm; every applied action is journaled with its reason so
``hetsched why`` can answer "why is my job / this node here".
"""

from .actions import (Action, Cause, Decision, DrainNodes, MoveJob, PowerNodes, SetPartitionNodes, SetSiteFactor,
                      SwitchPolicy)
from .applier import Applied, SlurmApplier
from .journal import Journal

__all__ = ["Action", "Applied", "Cause", "Decision", "DrainNodes", "Journal", "MoveJob", "PowerNodes",
           "SetPartitionNodes", "SetSiteFactor", "SlurmApplier", "SwitchPolicy"]
