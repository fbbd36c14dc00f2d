"""Packing: which pending flexible jobs start on which node class, decided by a MILP (HiGHS) every cycle.

Pipeline (all pure; the daemon and the simulator call it the same way)::

    pools, classes = classes_from_site(site, state)            # node classes = partition x node group
    problem = problem_from_jobs(pending_jobs, pools, classes)  # jobs aggregated into shapes with counts
    result = pack(problem, HighspySolver())                     # greedy FFD, then the MILP under a hard cap
    moves = decide_moves(pending_jobs, problem, result)         # (job_id, partition, features, reason)

Variables (per option j = (shape s, class k over pool p, tier t in {now, boot})) and pools p:
    x_j  in {0..ub_j}          jobs of shape s started on class k, now or once booted nodes are up
    y_p  in {0..down_nodes_p}  powered-down nodes of pool p to boot

Objective (maximise)::

    sum_j x_j * ( W^band_s * speed_{k,w_s} * 2^(-delay_t,p / H)                                    # value
                  - lambda * price_p * share_{s,p} * hours_s / speed_{k,w_s} )                     # job cost
    - sum_p y_p * lambda * price_p * boot_time_p / 3600                                          # boot cost

with W = ``band_base`` (2: each priority band doubles a job's worth, band 7 is most urgent), speed the workload
class's factor on the class (accelerator type, else arch; 0 = cannot run, so no option), delay 0 for ``now`` and
the pool's boot time for ``boot``, H = ``half_life_s`` (600 s), lambda = ``cost_weight`` (the site's
``cost_weights.cost``), price the node-hour price, share = the busiest resource's fraction of one node
(8 of 64 cores -> 0.125; summed over a multi-node job's nodes), hours the job's time limit. A pinned shape's
value is x (1 + ``options.PINNED_PREFERENCE``, 1e-3): at equal worth it keeps its place before a movable job is
sent there. Options with net value <= 0 are never created.

Constraints: every shape starts at most its count; per pool and resource (cores, memory, accelerators) the
``now`` jobs fit what is free now and the ``boot`` jobs fit y_p nodes (see :mod:`.rows`). Capacity is fluid
per pool: a job's per-node slice must fit one node, but fragmentation across nodes is Slurm's to handle.

Solvers (injected, :class:`MilpSolver`): :class:`HighspySolver` (the matrix straight to HiGHS; fastest, the
default) and :class:`PyomoSolver` (the same model in Pyomo via APPSI or pyomo.contrib.solver). Every answer is a
:class:`PackingResult` with status, objective, bound, gap, build_s, solve_s and a reason per assignment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .aggregate import aggregate, allowed_classes
from .apply import decide_moves, problem_from_jobs
from .classes import GroupState, classes_from_site
from .model import (
    Assignment, JobShape, Move, NodeClass, PackingParams, PackingProblem, PackingResult, PendingJob, Pool, Resources,
    SolveStatus,
)

if TYPE_CHECKING:
    from .solver import MilpSolver


def _highspy() -> MilpSolver:
    from .highs_direct import HighspySolver

    return HighspySolver()


def _pyomo(interface: str) -> MilpSolver:
    from .pyomo_model import PyomoSolver  # Pyomo costs ~0.4 s to import: only when this solver is asked for

    return PyomoSolver(interface)


SOLVERS = {"highspy": _highspy, "pyomo-appsi": lambda: _pyomo("appsi"), "pyomo-contrib": lambda: _pyomo("contrib")}

# The numerical core (numpy) and the solvers (highspy, Pyomo) load on first use of these names: the data model
# above is all that `import slurm_plugin.cycle` or the CLI need before a packing runs.
__getattr__, __dir__, __all__ = lazy_exports(__name__, globals(), {
    ".solve": ["pack"], ".solver": ["MilpAnswer", "MilpSolver"],
    ".highs_direct": ["HighspySolver"], ".pyomo_model": ["PyomoSolver"],
}, eager=[
    "SOLVERS", "Assignment", "GroupState", "JobShape", "Move", "NodeClass", "PackingParams", "PackingProblem",
    "PackingResult", "PendingJob", "Pool", "Resources", "SolveStatus", "aggregate", "allowed_classes",
    "classes_from_site", "decide_moves", "problem_from_jobs",
])
